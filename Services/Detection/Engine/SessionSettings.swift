import RoadSaveModel

/// The detection settings a session uses, out of line (8 bytes a device instead of `DetectionSettings`' 216) and
/// shared: the devices of an application started with the same settings hold one copy (`DeviceFleet` hands it
/// round), and the engines read them through this pointer instead of copying them into a context per record.
/// Written to checkpoints exactly as the settings themselves, so the format is unchanged.
@propertyWrapper
public struct SessionSettings: Sendable, Codable {
    /// Settings are replaced whole, never changed in place: the storage is never written after it is made.
    private(set) var storage: OutOfLine<DetectionSettings>

    /// One storage for the default settings, shared by every session made before its application's settings came.
    private static let defaults = OutOfLine(DetectionSettings())

    public init(wrappedValue: DetectionSettings) {
        storage = OutOfLine(wrappedValue)
    }

    public init() {
        storage = Self.defaults
    }

    public var wrappedValue: DetectionSettings {
        get { storage.value }
        set { storage = OutOfLine(newValue) }
    }

    /// Takes `other`'s storage when it holds the same settings (so that devices of an application share one).
    mutating func share(_ other: SessionSettings) {
        guard !storage.isShared(with: other.storage), storage.value == other.storage.value else { return }
        storage = other.storage
    }

    public init(from decoder: any Decoder) throws {
        storage = OutOfLine(try decoder.singleValueContainer().decode(DetectionSettings.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(storage.value)
    }
}
