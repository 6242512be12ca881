import Foundation
import RoadSaveTestKit
import Testing

/// The three services as separate processes on loopback, fed by a Python gateway and watched by a Python subscriber
/// and a Python webhook receiver: the paths of PROTOCOL §7 as outside programs use them.
@Suite("Events from gateway to alerting systems")
struct EventFlowTests {
    /// The recorded drive that ends in a crash: the subscriber and the webhook receiver each get tripDidStart,
    /// crashDetected (after the platform's verdict, with the verdict's confidence), its crashFollowUp and
    /// tripDidEnd, each exactly once
    /// (raw messages: nothing is deduplicated here), with the fields and IDs `roadsave replay` gave for the same
    /// recording.
    @Test func recordedCrashReachesSubscriberAndWebhookExactlyOnce() async throws {
        try await withPipelineSlot {
            // medium, where the embedded evaluator would say high: the confidence must come from this platform.
            let platform = try await StubPlatform(["--verdict", "medium"])
            defer { platform.kill() }
            // The first request is refused with 503: the notifier must retry it (same event, same ID).
            var options = Services.Options()
            let webhook = try await WebhookReceiver(secret: options.webhookSecret, failFirst: 1)
            defer { webhook.kill() }
            options.platform = platform.url
            options.webhooks = [webhook.url]
            let (services, subscriber) = try await Services.startFlowing(options)
            defer {
                subscriber.kill()
                services.kill()
            }

            let file = try RecordedCrash.file()
            defer { try? FileManager.default.removeItem(at: file) }
            let sent = try await Gateway.send(file, to: services.gatewayEndpoint)
            #expect(sent.status == 0, "\(sent.log)")
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n").count
            #expect(sent.batches.reduce(0) { $0 + ($1.accepted ?? 0) } == lines)
            #expect(sent.batches.allSatisfy { $0.rejected.isEmpty })

            let user = RecordedCrash.user
            let names = ["tripDidStart", "crashDetected", "crashFollowUp", "tripDidEnd"]
            let arrived = await eventually(timeout: 25) {
                names.allSatisfy { subscriber.count($0, user: user) >= 1 }
                    && names.allSatisfy { name in webhook.delivered(user: user).contains { $0.event == name } }
            }
            #expect(
                arrived,
                "not every event arrived\n\(subscriber.child.tail())\n\(webhook.child.tail())\n\(services.logs())")
            // Anything sent twice would come within this.
            try await Task.sleep(nanoseconds: 2_000_000_000)

            let expected = try RecordedCrash.expected()
            let received = subscriber.messages(user: user)
            for name in names {
                #expect(
                    received.filter { $0.event == name }.count == 1,
                    "\(name) on the subscriber: \(received.map(\.topic))")
                #expect(
                    webhook.delivered(user: user).filter { $0.event == name }.count == 1,
                    "\(name) delivered to the webhook: \(webhook.requests.map { "\($0.status) \($0.event) \($0.user)" })"
                )
            }
            #expect(received.first?.event == "tripDidStart", "tripDidStart comes first: \(received.map(\.event))")
            for message in received {
                #expect(message.topic == "\(message.event).\(RecordedCrash.app).\(user)")
            }

            // The crash, with every field of PROTOCOL §3.
            let crash = try #require(received.first { $0.event == "crashDetected" })
            let reviewed = try #require(expected["crashDetected"])
            #expect(crash.body.string("confidence") == "medium")
            #expect(crash.body.bool("isTest") == false)
            // A JSON boolean, not a number or a string (the subscriber prints the body as Python's json reads it).
            #expect(
                subscriber.child.stdout.contains {
                    $0.text.contains("\"crashID\"") && $0.text.contains("\"isTest\": false")
                })
            #expect(crash.body.string("app") == RecordedCrash.app)
            #expect(crash.body.string("user") == user)
            for key in ["eventID", "crashID", "detectedAt"] {
                #expect(crash.body.string(key) != nil && crash.body.string(key) == reviewed.string(key), "\(key)")
            }
            for key in ["latitude", "longitude"] {
                let value = try #require(crash.body.number(key), "\(key) missing")
                #expect(abs(value - (reviewed.number(key) ?? .nan)) < 1e-6, "\(key): \(value)")
            }
            // Never before the evaluation: the platform was asked about this crash before the event came out.
            let evaluation = try #require(
                platform.evaluations.first { jsonLine($0.body).contains(user) },
                "the platform was never asked\n\(platform.child.tail())")
            #expect(evaluation.time <= crash.time)
            // Its details (those that do not depend on the test's shorter delays, as the reviewed ones), and its
            // follow-up after it, the same crash with the verdict's confidence (its watch ends within the records).
            for key in ["peakG", "impactDurationMs", "impacts", "positionAccuracy", "positionAge", "heading"] {
                #expect(crash.body.number(key) != nil && crash.body.number(key) == reviewed.number(key), "\(key)")
            }
            #expect(crash.body.bool("positionTrusted") == reviewed.bool("positionTrusted"))
            #expect((crash.body["recentPositions"] as? [Any])?.count == 2)
            let followUp = try #require(received.first { $0.event == "crashFollowUp" })
            #expect(followUp.body.string("crashID") == crash.body.string("crashID"))
            #expect(followUp.body.string("confidence") == "medium")
            #expect(
                followUp.body.string("outcome") == "stationary"
                    && followUp.body.string("outcome") == expected["crashFollowUp"]?.string("outcome"))
            #expect(
                received.firstIndex { $0.event == "crashDetected" }! < received.firstIndex {
                    $0.event == "crashFollowUp"
                }!,
                "the follow-up before its crash: \(received.map(\.event))")

            // The trip, start and end, with the reviewed IDs and dates.
            for name in ["tripDidStart", "tripDidEnd"] {
                let message = try #require(received.first { $0.event == name })
                let reviewedTrip = try #require(expected[name])
                // Not the end's reason: the reviewed morning's records end less than its stop delay (240 s) after
                // the crash, so replay ends the trip deviceSilent; the services here stop in 5 s.
                for key in ["eventID", "tripID", "startDate"] + (name == "tripDidEnd" ? ["endDate"] : []) {
                    #expect(message.body.string(key) == reviewedTrip.string(key), "\(name).\(key)")
                }
            }
            let end = try #require(received.first { $0.event == "tripDidEnd" })
            for key in ["distanceMetres", "duration", "averageSpeed"] {
                #expect(end.body.number(key) != nil, "tripDidEnd.\(key)")
            }

            // Webhooks: signed, headed, the same events (IDs) as the subscriber's.
            #expect(!webhook.requests.isEmpty)
            for request in webhook.requests {
                #expect(request.signatureValid, "a webhook request whose HMAC does not verify: \(request.body)")
                #expect(request.headerEvent == request.event)
                #expect(request.headerEventID == request.body.string("eventID"))
            }
            #expect(
                Set(webhook.delivered(user: user).compactMap { $0.body.string("eventID") })
                    == Set(received.compactMap { $0.body.string("eventID") }))
            // The applicationID is a credential: no service wrote it to its log.
            #expect(
                !services.all.contains { $0.stderr.contains { $0.text.contains(RecordedCrash.app) } },
                "an applicationID in a log line: \(services.all.flatMap(\.stderr).first { $0.text.contains(RecordedCrash.app) }?.text ?? "")"
            )
            // The refused first request was sent again, the same event under the same ID.
            let refused = try #require(webhook.requests.first)
            #expect(refused.status == 503)
            #expect(
                webhook.requests.dropFirst().contains { $0.status == 200 && $0.headerEventID == refused.headerEventID })
        }
    }

    /// A batch with bad records: each gets its index, field and reason in the acknowledgement, and the good records
    /// of the same batch still make their trip — in both content types.
    @Test(arguments: ["msgpack", "json"])
    func badRecordsAreRejectedOneByOneAndTheRestGoesThrough(contentType: String) async throws {
        try await withPipelineSlot {
            let (services, subscriber) = try await Services.startFlowing()
            defer {
                subscriber.kill()
                services.kill()
            }

            let user = "mixed-\(contentType)"
            let drive = Drive.commute(app: "demo-app", user: user)
            var lines = drive.records.map(jsonLine)
            let t = drive.records[0]["t"] as! Double
            // index in the batch → (line, field at fault)
            let bad: [(Int, String, String)] = [
                (
                    3, #"{"kind":"location","app":"demo-app","user":"\#(user)","t":\#(t + 2.5),"lat":95.1,"lon":18.4}"#,
                    "lat"
                ),
                (7, #"{"kind":"location","app":"demo-app","user":"\#(user)","lat":-33.9,"lon":18.4}"#, "t"),
                (11, #"{"kind":"teleport","app":"demo-app","user":"\#(user)","t":\#(t + 10.5)}"#, "kind"),
                (15, #"this is not JSON"#, "(record)"),
                (
                    19,
                    #"{"kind":"activity","app":"demo-app","user":"\#(user)","t":\#(t + 18.5),"activity":"automotive","confidence":"extreme"}"#,
                    "confidence"
                ),
                (
                    23,
                    #"{"kind":"location","app":"demo-app","user":"\#(user)","t":\#(t + 22.5),"lat":-33.9,"lon":18.4,"speed":"fast"}"#,
                    "speed"
                ),
                (27, #"{"kind":"steps","app":"demo-app","t":\#(t + 26.5),"steps":5}"#, "user"),
            ]
            for (index, line, _) in bad { lines.insert(line, at: index) }
            let file = try temporaryFile(lines.joined(separator: "\n") + "\n", suffix: ".ndjson")
            defer { try? FileManager.default.removeItem(at: file) }

            let sent = try await Gateway.send(
                file, to: services.gatewayEndpoint, batchSize: 1000, contentType: contentType)
            #expect(sent.status == 0, "\(sent.log)")
            let batch = try #require(sent.batches.first)
            #expect(sent.batches.count == 1)
            #expect(batch.accepted == drive.records.count, "\(String(describing: batch.ack))")
            let rejected = batch.rejected.sorted { $0.index < $1.index }
            #expect(rejected.map(\.index) == bad.map(\.0), "\(rejected)")
            #expect(rejected.map(\.field) == bad.map(\.2), "\(rejected)")
            #expect(rejected.allSatisfy { !$0.reason.isEmpty })

            let arrived = await eventually(timeout: 20) {
                subscriber.count("tripDidStart", user: user) >= 1 && subscriber.count("tripDidEnd", user: user) >= 1
            }
            #expect(arrived, "the good records made no trip\n\(subscriber.child.tail())\n\(services.logs())")
            #expect(subscriber.count("tripDidStart", user: user) == 1)
            let end = subscriber.messages(user: user).first { $0.event == "tripDidEnd" }
            #expect(end?.body.string("endDate") == drive.lastMovement.map(iso8601))

            // A batch that cannot be read at all: one rejection at index -1, and sensor-ingest goes on.
            let garbage = try temporaryFile(
                contentType == "json" ? "{\"kind\": [not json" : "\u{C1}\u{C1}", suffix: ".bin")
            defer { try? FileManager.default.removeItem(at: garbage) }
            let unreadable = try await Gateway.send(
                garbage, to: services.gatewayEndpoint, contentType: contentType, raw: true)
            #expect(unreadable.status == 0, "\(unreadable.log)")
            let answer = try #require(unreadable.batches.first)
            #expect(answer.accepted == 0)
            #expect(answer.rejected.map(\.index) == [-1], "\(String(describing: answer.ack))")
            #expect(answer.rejected.allSatisfy { !$0.reason.isEmpty })
            #expect(services.ingest?.isRunning == true)
        }
    }

    /// Records of an applicationID sensor-ingest was not given are refused one by one (field `app`), and nothing
    /// comes of them; records of a known application in the same batch go through.
    @Test func unknownApplicationIsRefused() async throws {
        try await withPipelineSlot {
            let (services, subscriber) = try await Services.startFlowing()
            defer {
                subscriber.kill()
                services.kill()
            }

            let intruder = Drive.commute(app: "intruder-app", user: "intruder")
            let known = Drive.commute(app: "demo-app", user: "known")
            // Interleaved as one gateway would send them.
            var records: [[String: Any]] = []
            for index in 0..<max(intruder.records.count, known.records.count) {
                if index < intruder.records.count { records.append(intruder.records[index]) }
                if index < known.records.count { records.append(known.records[index]) }
            }
            let file = try temporaryFile(records.map(jsonLine).joined(separator: "\n") + "\n", suffix: ".ndjson")
            defer { try? FileManager.default.removeItem(at: file) }

            let sent = try await Gateway.send(file, to: services.gatewayEndpoint, batchSize: 1000)
            #expect(sent.status == 0, "\(sent.log)")
            let batch = try #require(sent.batches.first)
            #expect(batch.accepted == known.records.count)
            let intruderIndices = records.indices.filter { records[$0]["app"] as? String == "intruder-app" }
            #expect(batch.rejected.map(\.index).sorted() == intruderIndices)
            #expect(batch.rejected.allSatisfy { $0.field == "app" }, "\(batch.rejected.prefix(3))")
            // The applicationID is a credential: the refusal does not echo it.
            #expect(!batch.rejected.contains { $0.reason.contains("intruder-app") })

            let arrived = await eventually(timeout: 20) { subscriber.count("tripDidEnd", user: "known") >= 1 }
            #expect(arrived, "the known application's trip did not arrive\n\(services.logs())")
            #expect(subscriber.messages.filter { $0.body.string("app") == "intruder-app" }.isEmpty)
            #expect(
                !services.all.contains { $0.stderr.contains { $0.text.contains("intruder-app") } },
                "an unknown applicationID was written to a log")
        }
    }

    /// A gateway whose acknowledgements were lost sends its batches again (PROTOCOL §7: it keeps records until they
    /// are acknowledged): the crash is still reported once, and the trip started and ended once.
    @Test func resentBatchesStillGiveEachEventOnce() async throws {
        try await withPipelineSlot {
            let (services, subscriber) = try await Services.startFlowing()
            defer {
                subscriber.kill()
                services.kill()
            }

            let file = try RecordedCrash.file()
            defer { try? FileManager.default.removeItem(at: file) }
            let first = try await Gateway.send(file, to: services.gatewayEndpoint, batchSize: 100)
            let again = try await Gateway.send(file, to: services.gatewayEndpoint, batchSize: 100)
            #expect(first.status == 0 && again.status == 0, "\(first.log)\n\(again.log)")
            let user = RecordedCrash.user
            let names = ["tripDidStart", "crashDetected", "crashFollowUp", "tripDidEnd"]
            let arrived = await eventually(timeout: 20) { names.allSatisfy { subscriber.count($0, user: user) >= 1 } }
            #expect(arrived, "\(subscriber.child.tail())\n\(services.logs())")
            try await Task.sleep(nanoseconds: 2_000_000_000)
            for name in names {
                #expect(
                    subscriber.count(name, user: user) == 1, "\(name): \(subscriber.messages(user: user).map(\.event))")
            }
        }
    }

    /// A platform that answers `none` suppresses the crash: the evaluation happens, no crashDetected comes.
    @Test func platformVerdictNoneGivesNoCrashEvent() async throws {
        try await withPipelineSlot {
            let platform = try await StubPlatform(["--verdict", "none"])
            defer { platform.kill() }
            var options = Services.Options()
            options.platform = platform.url
            let (services, subscriber) = try await Services.startFlowing(options)
            defer {
                subscriber.kill()
                services.kill()
            }

            let file = try RecordedCrash.file()
            defer { try? FileManager.default.removeItem(at: file) }
            let sent = try await Gateway.send(file, to: services.gatewayEndpoint)
            #expect(sent.status == 0, "\(sent.log)")
            let user = RecordedCrash.user
            let settled = await eventually(timeout: 20) {
                subscriber.count("tripDidEnd", user: user) >= 1 && !platform.evaluations.isEmpty
            }
            #expect(settled, "no trip end or no evaluation\n\(platform.child.tail())\n\(services.logs())")
            // The verdict is in; an event, if one were coming, would follow at once.
            try await Task.sleep(nanoseconds: 2_000_000_000)
            #expect(
                subscriber.count("crashDetected", user: user) == 0, "\(subscriber.messages(user: user).map(\.body))")
            #expect(subscriber.count("tripDidStart", user: user) == 1)
        }
    }

    /// A platform that cannot evaluate (503 to every evaluation, after the retries) gives the crash with
    /// confidence `unknown`: an unconfirmed alert rather than none.
    @Test func platformDownGivesConfidenceUnknown() async throws {
        try await withPipelineSlot {
            let platform = try await StubPlatform(["--fail-evaluations"])
            defer { platform.kill() }
            var options = Services.Options()
            options.platform = platform.url
            options.detectArguments = ["--platform-attempts", "2", "--platform-timeout", "2"]
            let (services, subscriber) = try await Services.startFlowing(options)
            defer {
                subscriber.kill()
                services.kill()
            }

            let file = try RecordedCrash.file()
            defer { try? FileManager.default.removeItem(at: file) }
            let sent = try await Gateway.send(file, to: services.gatewayEndpoint)
            #expect(sent.status == 0, "\(sent.log)")
            let user = RecordedCrash.user
            let arrived = await eventually(timeout: 25) { subscriber.count("crashDetected", user: user) >= 1 }
            #expect(arrived, "no crash event\n\(platform.child.tail())\n\(services.logs())")
            try await Task.sleep(nanoseconds: 1_500_000_000)
            #expect(subscriber.count("crashDetected", user: user) == 1)
            let crash = try #require(subscriber.messages(user: user).first { $0.event == "crashDetected" })
            #expect(crash.body.string("confidence") == "unknown")
            #expect(crash.body.bool("isTest") == false)
            #expect(crash.body.string("crashID") == (try RecordedCrash.expected())["crashDetected"]?.string("crashID"))
            #expect(
                platform.evaluations.count >= 2,
                "the evaluation was not retried: \(platform.evaluations.count) requests")
        }
    }

    /// A device that falls silent in the middle of a trip: its tripDidEnd comes once the offline grace
    /// (`tripOfflineGrace`, 5 s here) has passed on the clock, `deviceSilent`, with endDate at its last movement,
    /// not when the decision was taken.
    @Test func silentDeviceTripEndsAfterTheOfflineGraceOnTheClock() async throws {
        try await withPipelineSlot {
            let (services, subscriber) = try await Services.startFlowing()
            defer {
                subscriber.kill()
                services.kill()
            }

            let user = "gone-quiet"
            var drive = Drive(app: "demo-app", user: user)
            drive.activity("automotive", "high")
            drive.ramp(from: 2.5, to: 13, seconds: 6)
            drive.drive(40, speed: 13)
            // …and nothing more: the phone's battery died at full speed.
            let file = try drive.write()
            defer { try? FileManager.default.removeItem(at: file) }
            let sent = try await Gateway.send(file, to: services.gatewayEndpoint)
            #expect(sent.status == 0, "\(sent.log)")
            let silentSince = try #require(sent.lastAcknowledgedAt)

            let ended = await eventually(timeout: 20) { subscriber.count("tripDidEnd", user: user) >= 1 }
            #expect(ended, "no tripDidEnd for the silent device\n\(subscriber.child.tail())\n\(services.logs())")
            let start = subscriber.messages(user: user).first { $0.event == "tripDidStart" }
            let end = try #require(subscriber.messages(user: user).first { $0.event == "tripDidEnd" })
            #expect(start != nil)
            let waited = end.time - silentSince
            #expect(waited >= 4.8, "the trip ended \(waited) s after the device fell silent, before the 5 s grace")
            #expect(waited <= 14, "the trip ended \(waited) s after the device fell silent")
            #expect(end.body.string("endDate") == drive.lastMovement.map(iso8601))
            #expect(end.body.string("endReason") == "deviceSilent")
            try await Task.sleep(nanoseconds: 1_000_000_000)
            #expect(subscriber.count("tripDidEnd", user: user) == 1)
        }
    }
}
