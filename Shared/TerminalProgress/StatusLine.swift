import Synchronization
import SystemKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// One line at the bottom of a terminal that is redrawn in place (`\r`, then "erase to the end of the line",
/// `ESC [ K`), and the other lines written to the same terminal while it is shown. A log line written as it is would
/// land after the status text on the same row; written through `writeAbove` it clears the row first, and the status
/// text is drawn again below it, all in one `write(2)`, so neither is broken into.
///
/// `StatusLine.standardError` is the process's one status line; `Log` and the commands' own stderr lines go through
/// it while it shows something (`isShowing`, one atomic load otherwise).
public final class StatusLine: ProgressDisplay {
    public static let standardError = StatusLine(descriptor: 2)

    /// Moves to the start of the row and erases it.
    public static let eraseRow = "\r\u{1B}[K"

    private let descriptor: Int32
    /// The text shown, nil when nothing is; writes happen under the lock, so lines never interleave.
    private let shown = Locked<String?>(nil)
    private let showing = Atomic<Bool>(false)

    public init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Whether a status text is on the terminal now.
    public var isShowing: Bool { showing.load(ordering: .relaxed) }

    public func show(_ text: String) {
        let fitted = Self.fit(text, width: columns())
        shown.withLock { current in
            current = fitted
            showing.store(true, ordering: .relaxed)
            writeAll(descriptor, Self.eraseRow + fitted)
        }
    }

    public func clear() {
        shown.withLock { current in
            guard current != nil else { return }
            current = nil
            showing.store(false, ordering: .relaxed)
            writeAll(descriptor, Self.eraseRow)
        }
    }

    /// Writes `line` (which ends with a line break) above the status text: erases the row, writes the line, draws
    /// the status text again. Without a status text the line is written as it is.
    public func writeAbove(_ line: String) {
        shown.withLock { current in
            guard let current else {
                writeAll(descriptor, line)
                return
            }
            writeAll(descriptor, Self.eraseRow + line + current)
        }
    }

    /// The terminal's width in columns, nil when it does not say (not a terminal, or a pseudo-terminal whose size
    /// was never set).
    private func columns() -> Int? {
        var size = winsize()
        guard ioctl(descriptor, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }

    /// `text` cut to `width - 1` characters: a line that reached the last column would wrap on some terminals, and
    /// `\r` then returns to the wrapped part only.
    static func fit(_ text: String, width: Int?) -> String {
        guard let width, width > 1, text.count > width - 1 else { return text }
        return String(text.prefix(width - 1))
    }
}
