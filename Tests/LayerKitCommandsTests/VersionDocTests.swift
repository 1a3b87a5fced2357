import Foundation
import Testing
import LayerKit
@testable import LayerKitCommands

/// The version is one constant: CHANGELOG.md's newest entry and `--version` say it.
struct VersionDocTests {
    @Test func theChangelogsNewestEntryIsThePackagesVersion() throws {
        let changelog = try String(contentsOf: DocOutputTests.root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let newest = try #require(changelog.split(separator: "\n").first { $0.hasPrefix("## ") })
        #expect(newest == "## \(LayerKitVersion.number)")
        let runner = CommandRunner()
        #expect(runner.run(["--version"]) == 0)
        #expect(runner.out.hasPrefix("layerkit \(LayerKitVersion.number) (commit "))
    }
}
