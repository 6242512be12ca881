print("roadsave")
