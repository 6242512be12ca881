#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads NDJSON record files line by line, without loading the whole file: each line is handed over as bytes
/// with its 1-based number, so errors can name it. Blank lines are skipped.
public struct NDJSONLineReader: ~Copyable {
    private let file: UnsafeMutablePointer<FILE>
    private let closesFile: Bool
    private var lineNumber = 0
    private var line: UnsafeMutablePointer<CChar>? = nil
    private var capacity = 0

    /// Opens a file; `-` reads standard input.
    public init(path: String) throws(ReadError) {
        if path == "-" {
            file = fdopen(0, "r")
            closesFile = false
        } else {
            guard let opened = fopen(path, "r") else {
                throw ReadError(path: path, reason: String(cString: strerror(errno)))
            }
            file = opened
            closesFile = true
        }
    }

    deinit {
        free(line)
        if closesFile { fclose(file) }
    }

    public struct ReadError: Error, Sendable, CustomStringConvertible {
        public var path: String
        public var reason: String
        public var description: String { "cannot read \(path): \(reason)" }
    }

    /// Like `forEachLine`, but stops after the line for which `body` returns false; `ended` says whether the
    /// input is exhausted.
    public mutating func forEachLineUntil(_ body: (UnsafeBufferPointer<UInt8>, Int) -> Bool, ended: (Bool) -> Void) {
        var exhausted = true
        forEachLineWhile { line, number in
            let goOn = body(line, number)
            if !goOn { exhausted = false }
            return goOn
        }
        ended(exhausted)
    }

    /// Calls `body` with each non-blank line (without its line break) and its number.
    public mutating func forEachLine(_ body: (UnsafeBufferPointer<UInt8>, Int) throws -> Void) rethrows {
        try forEachLineWhile { line, number in
            try body(line, number)
            return true
        }
    }

    private mutating func forEachLineWhile(_ body: (UnsafeBufferPointer<UInt8>, Int) throws -> Bool) rethrows {
        while true {
            let length = getline(&line, &capacity, file)
            guard length >= 0, let line else { return }
            lineNumber += 1
            var count = length
            while count > 0, line[count - 1] == 0x0A || line[count - 1] == 0x0D { count -= 1 }
            let bytes = UnsafeRawPointer(line).assumingMemoryBound(to: UInt8.self)
            let buffer = UnsafeBufferPointer(start: bytes, count: count)
            if buffer.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            if try !body(buffer, lineNumber) { return }
        }
    }
}
