import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An exclusive hold on a data directory for as long as a service runs, so two processes never share a store: an
/// advisory `flock` on `DIR/LOCK`, which holds the pid of the process that has it (for the message of the next one).
///
/// `flock` rather than a pid file alone: the kernel drops the lock when the process ends, however it ends (SIGKILL
/// included), so a stale LOCK file never blocks a restart. The file stays; only the lock on it matters.
public final class DataDirectoryLock: Sendable { // immutable after init; the fd is only closed in deinit
    /// How long a second process waits by default: a predecessor that was just told to stop (its supervisor died, or
    /// was restarted) may still be finishing its last commit.
    public static let defaultWait = 10.0

    public let directory: String
    public let path: String
    private let descriptor: Int32

    /// Takes the lock on `directory` (which must exist), retrying for up to `wait` seconds while another process holds
    /// it. The error names the directory and the pid holding it.
    public init(directory: String, wait: Double = DataDirectoryLock.defaultWait) throws(StorageError) {
        self.directory = directory
        path = DataDirectory.file("LOCK", in: directory)
        // O_CLOEXEC: a process this service might start must not inherit (and so keep) the lock.
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            throw StorageError(
                code: -1, message: "cannot open the lock file \(path) of data directory \(directory): \(reason)")
        }
        let deadline = Date().addingTimeInterval(wait)
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let failure = errno
            if failure == EINTR { continue }
            guard failure == EWOULDBLOCK, Date() < deadline else {
                let holder = Self.readHolder(descriptor)
                close(descriptor)
                if failure != EWOULDBLOCK {
                    throw StorageError(
                        code: -1,
                        message:
                            "cannot lock data directory \(directory) (\(path)): \(String(cString: strerror(failure)))")
                }
                let who = holder.map { "process \($0)" } ?? "another process"
                throw StorageError(
                    code: -1,
                    message:
                        "data directory \(directory) is in use by \(who) (lock \(path) still held after waiting \(Self.seconds(wait)) s); two processes must not share a store: stop the other one or give this one its own --data-dir"
                )
            }
            usleep(100_000)
        }
        self.descriptor = descriptor
        // The pid for whoever comes next; the lock, not this text, is what keeps them out.
        let text = "\(getpid())\n"
        _ = ftruncate(descriptor, 0)
        _ = text.withCString { pwrite(descriptor, $0, strlen($0), 0) }
        _ = fsync(descriptor)
    }

    deinit {
        // Leave the file: removing it would let a third process lock a new file while a second still waits on the old.
        close(descriptor)
    }

    /// The pid written by the holder, if the file holds one.
    static func readHolder(_ descriptor: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = pread(descriptor, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return Int32(text)
    }

    static func seconds(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }
}
