// The events, records and the delegate the library's signatures use are the model's (`RoadSaveEvent`, `SensorRecord`,
// `RoadSaveDelegate`, `CrashInfo`, …): a package that imports RoadSaveClient gets them with it, without naming the
// module they live in.
@_exported import RoadSaveModel
