// libzmq from Debian's libzmq3-dev, linked directly (its .pc file carries an -isystem flag SwiftPM warns about).
#include <zmq.h>
