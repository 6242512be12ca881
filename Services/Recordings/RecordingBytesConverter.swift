import Foundation

/// A converter that reads a whole recording file as bytes: reading it from a file or from text comes with it.
public protocol RecordingBytesConverter {
    static func convert(bytes: [UInt8], fileName: String, app: String, user: String?) throws -> ConvertedRecording
}

extension RecordingBytesConverter {
    public static func convert(file: URL, app: String = "recorded", user: String? = nil) throws -> ConvertedRecording {
        let data = try RecordingFile.data(of: file)
        return try convert(bytes: [UInt8](data), fileName: file.lastPathComponent, app: app, user: user)
    }

    public static func convert(text: String, fileName: String, app: String = "recorded", user: String? = nil) throws
        -> ConvertedRecording
    {
        try convert(bytes: Array(text.utf8), fileName: fileName, app: app, user: user)
    }
}
