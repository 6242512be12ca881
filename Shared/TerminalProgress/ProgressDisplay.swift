/// Where a `ProgressMeter` puts its line: the terminal's status line (`StatusLine`), or a recorder in tests.
public protocol ProgressDisplay: AnyObject, Sendable {
    /// Replaces the line shown (if any) by `text`, one line without a line break.
    func show(_ text: String)
    /// Removes the line, leaving the cursor at the start of an empty line.
    func clear()
}
