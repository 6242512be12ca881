// ZeroMQ for RoadSave's services: libzmq 4.3 (Debian's libzmq3-dev) in Swift 6, for Linux.
//
// The pieces
// - `ZMQContext`   one per process; `shutdown()` from any thread ends blocked calls with ETERM and stops its reactors;
//                  `terminate()` once every socket is closed.
// - `ZMQSocket`    one libzmq socket, used on one thread only (not Sendable). Whole multipart messages in and out as
//                  `[[UInt8]]`; `Int32` options with named setters.
// - `ZMQPoller`    `zmq_poll` over sockets and plain file descriptors.
// - `Reactor`      a dedicated, named thread per service that owns the sockets and runs a `zmq_poll` loop with timers;
//                  async code reaches it with `post` / `run` and `Sendable` closures, and awaits its end with `finished()`.
// - `ReactorLoop`  the reactor thread's side: `socket`, `onReadable`, `schedule`/`every`/`cancel`, `onStop`, `stop`,
//                  and `setValue`/`value` to keep non-Sendable service state where posted closures can find it.
// - `MonotonicClock.now()` seconds on CLOCK_MONOTONIC, the clock of every timer.
//
// Defaults
// - ZMQ_LINGER 0 on every new socket: closing never waits and `zmq_ctx_term` never hangs, but unsent messages are
//   dropped. Set a bounded linger on a socket whose last messages must leave.
// - ZMQ_SNDTIMEO 1000 ms on every new socket: a PUSH/DEALER/REQ/PAIR (or mandatory ROUTER) facing a dead or slow peer
//   gives up after a second, `send` returning false, instead of freezing its thread. On a reactor use
//   `send(..., dontWait: true)`, which never blocks.
// - ZMQ_RCVTIMEO -1 (libzmq's default): blocking receives belong on dedicated threads; shutdown ends them with ETERM.
// - High-water marks stay libzmq's (1000 messages each way). ZMQ_IO_THREADS 1.
//
// How DESIGN-NOTES' pitfalls are handled
// 1. Nothing here blocks in async code: the only blocking call a service needs is the reactor's `zmq_poll`, on its own
//    thread; `Reactor.run` suspends the task on a continuation, `post` never blocks, `finished()` awaits the end.
// 2. Sockets are not Sendable (an explicit unavailable conformance) and a `ReactorLoop` is not either, so the compiler
//    keeps them on their thread; debug builds also assert the loop's thread.
// 3. `receive` reads with `zmq_msg_recv` (no truncation), copies each frame out, reads ZMQ_RCVMORE before closing the
//    frame, and returns the whole message. Every int option is passed as Int32.
// 4. Linger 0 by default; reactors close their sockets when their loop ends, before anyone terminates the context;
//    ETERM ends a reactor normally (`wait()` returns nil) and is `ZMQError.isTerminated`; EAGAIN becomes false/nil;
//    EINTR is retried in send, receive, poll, ctx_term and the wake-up pipe.
// 5. The default send timeout above.
// 8. The CZeroMQ module map links `zmq` directly.
