import Foundation
import Testing

/// The resolver's policy where it lives: every scenario in Resources/replay (one `.rpl` file
/// each, README.md there describes the format) played against a `ResolverMachine` on a clock
/// only the scenario moves, checking the exchanges it starts and the replies it sends, in order.
@Suite struct ResolverReplayTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Resources/replay").path

    static var scenarios: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasSuffix(".rpl") }.sorted()
    }

    /// Plays one scenario; the first check that fails is the test's failure, at its line.
    static func play(_ name: String, _ text: String) -> ReplayFailure? {
        do {
            var run = try ReplayRun(try ReplayScript(name: name, text: text))
            try run.run()
            return nil
        } catch let error as ReplayFailure {
            return error
        } catch let error as ReplayScript.SyntaxError {
            return ReplayFailure(file: name, step: nil, problem: error.description)
        } catch {
            return ReplayFailure(file: name, step: nil, problem: "\(error)")
        }
    }

    @Test func theScenariosAreThere() {
        #expect(Self.scenarios.count >= 40, "\(Self.directory)")
    }

    @Test(arguments: scenarios) func scenario(_ name: String) throws {
        let path = Self.directory + "/" + name
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let failure = Self.play(name, text)
        func record() {
            guard let failure else { return }
            Issue.record(
                Comment(rawValue: failure.description),
                sourceLocation: SourceLocation(
                    fileID: "HTTPDNSCoreTests/" + name, filePath: path, line: failure.step?.line ?? 1, column: 1))
        }
        if let bug = try ReplayScript(name: name, text: text).knownBug {
            withKnownIssue(Comment(rawValue: bug)) { record() }
        } else {
            record()
        }
    }

    // MARK: the driver itself

    static let small = """
        CONFIG
        Upstream=alibaba http://127.0.0.1:9/only
        CONFIG_END
        STEP 1 RESOLVE r1 a.example.com
        STEP 2 CHECK_QUERY upstream=alibaba host=a.example.com family=both timeout=2000
        STEP 3 TIME_PASSES ELAPSE 40ms
        STEP 4 REPLY a.example.com v4=203.0.113.1 ttl=120
        STEP 5 CHECK_REPLY r1 ok v4=203.0.113.1 ttl=120 source=upstream
        """

    @Test func aScenarioThatHoldsPasses() {
        #expect(Self.play("small.rpl", Self.small) == nil)
    }

    /// A check that does not hold names the file, the step, its line and what differed.
    @Test func aFailingCheckNamesTheFileTheStepAndTheDifference() throws {
        let wrong = Self.small.replacingOccurrences(of: "ttl=120 source", with: "ttl=115 source")
        let failure = try #require(Self.play("wrong.rpl", wrong))
        #expect(failure.step?.number == 5 && failure.step?.line == 8)
        #expect(failure.description.hasPrefix("wrong.rpl: STEP 5 CHECK_REPLY (line 8): "), "\(failure)")
        #expect(failure.description.contains("ttl is 120, expected =115"), "\(failure)")
    }

    /// An action no step checks fails the scenario at its end; one checked out of order fails
    /// at the check.
    @Test func everyActionMustBeCheckedInOrder() throws {
        let unchecked = Self.small.replacingOccurrences(
            of: "STEP 5 CHECK_REPLY r1 ok v4=203.0.113.1 ttl=120 source=upstream", with: "")
        let failure = try #require(Self.play("unchecked.rpl", unchecked))
        #expect(failure.step == nil && failure.description.contains("no step checked: reply r1 ok"), "\(failure)")
        let early = Self.small.replacingOccurrences(of: "STEP 2 CHECK_QUERY", with: "STEP 2 CHECK_NOTHING ;")
        let second = try #require(Self.play("early.rpl", early))
        #expect(second.step?.number == 2 && second.description.contains("expected nothing, got query"), "\(second)")
    }

    /// Repeated steps say which iteration failed; timers fire at their own instants.
    @Test func aRepeatedStepNamesItsIteration() throws {
        let text = """
            CONFIG
            Upstream=alibaba http://127.0.0.1:9/only
            CONFIG_END
            REPEAT i 0 2
            STEP 1 RESOLVE r{i} n{i}.example.com timeout={i+100}
            STEP 2 CHECK_QUERY host=n{i}.example.com timeout=101
            REPEAT_END
            """
        let failure = try #require(Self.play("repeat.rpl", text))
        #expect(failure.description.contains("as \"STEP 2 CHECK_QUERY host=n0.example.com timeout=101\""), "\(failure)")
        #expect(failure.description.contains("timeout is 100, expected =101"), "\(failure)")
    }
}
