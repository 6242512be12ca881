import Foundation

/// Writes `data` to a child's standard input on a thread of its own, then closes it (the child sees its end): a large
/// input must not block the test while the child, not yet reading, fills its outputs.
public func writeInBackground(_ data: Data, to handle: FileHandle) {
    Thread {
        handle.write(data)
        try? handle.close()
    }.start()
}
