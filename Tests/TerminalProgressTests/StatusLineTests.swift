import Testing

@testable import TerminalProgress

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct StatusLineTests {
    /// What a status line on a pipe writes, read back.
    private func written(_ body: (StatusLine) -> Void) -> String {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let line = StatusLine(descriptor: ends[1])
        body(line)
        close(ends[1])
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(ends[0], &chunk, chunk.count)
            if count <= 0 { break }
            bytes += chunk[..<count]
        }
        close(ends[0])
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func eachDrawingReplacesTheRow() {
        let text = written { line in
            line.show("replay: 1 records")
            line.show("replay: 2 records")
            line.clear()
        }
        #expect(text == "\r\u{1B}[Kreplay: 1 records\r\u{1B}[Kreplay: 2 records\r\u{1B}[K")
    }

    /// A log line written while the status shows lands on a row of its own, and the status comes back below it.
    @Test func aLogLineIsWrittenAboveTheStatus() {
        let text = written { line in
            line.writeAbove("before\n")
            line.show("send: 5 records")
            #expect(line.isShowing)
            line.writeAbove("level=warning msg=x\n")
            line.clear()
            #expect(!line.isShowing)
            line.clear()
            line.writeAbove("after\n")
        }
        #expect(
            text == "before\n\r\u{1B}[Ksend: 5 records\r\u{1B}[Klevel=warning msg=x\nsend: 5 records\r\u{1B}[Kafter\n")
    }

    @Test func aLongLineIsCutToTheTerminalsWidth() {
        #expect(StatusLine.fit("abcdef", width: 4) == "abc")
        #expect(StatusLine.fit("abc", width: 4) == "abc")
        #expect(StatusLine.fit("abcdef", width: nil) == "abcdef")
    }
}
