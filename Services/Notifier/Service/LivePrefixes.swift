import RoadSaveModel
import ZeroMQ

/// What the notifier's XPUB applies for one subscription of a subscriber key, so that the subscriber gets exactly the
/// topics (`<event>.<app>.<user>`) that match what it asked for AND belong to an application of its key.
///
/// For a key limited to applications A and a requested prefix P: for each event name E and app a in A, with
/// T = "E.a.", T is applied if P is a prefix of T (P asks for more than a's events of E: a's alone are given), P is
/// applied if T is a prefix of P (P is inside a's events of E already), nothing otherwise. The trailing "." of T keeps
/// app-1 from matching app-10. A key for every application gets P as asked.
///
/// An applicationID may contain "." (the model allows any characters but control ones), and then the topic cannot
/// tell the app from the user: "E.x.y.u" is app "x.y" or app "x" with user "y.u". So an app with a "." in its ID gets
/// no live prefix for a limited key (its events reach such a key through catch-up, which compares the app field), and
/// `LiveSubscriptions.withholds` keeps events of such apps off the live socket while a limited key could match them.
enum LivePrefixes {
    /// Every event name on the topics (`RoadSaveEvent.name`). A name missing here is never given to a limited key.
    static let eventNames = RoadSaveEvent.names

    /// The prefixes to subscribe on the subscriber's connection for `requested`, sorted, without repeats.
    static func applied(
        requested: [UInt8], applications: Set<String>?,
        eventNames: [String] = LivePrefixes.eventNames
    ) -> [[UInt8]] {
        guard let applications else { return [requested] }
        var prefixes: Set<[UInt8]> = []
        for app in applications where separable(app) {
            for event in eventNames {
                let topicStart = Array("\(event).\(app).".utf8)
                if topicStart.starts(with: requested) {
                    prefixes.insert(topicStart)
                } else if requested.starts(with: topicStart) {
                    prefixes.insert(requested)
                }
            }
        }
        return prefixes.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// Whether the topic can tell this application from the others: no "." in its ID.
    static func separable(_ application: String) -> Bool {
        !application.isEmpty && !application.utf8.contains(UInt8(ascii: "."))
    }
}
