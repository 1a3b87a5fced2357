import Foundation
import Testing
import LayerKit
@testable import LayerKitCommands

/// The version is one constant: CHANGELOG.md's newest released entry and `--version` say it.
struct VersionDocTests {
    @Test func theChangelogsNewestEntryIsThePackagesVersion() throws {
        let changelog = try String(contentsOf: DocOutputTests.root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        // Work not yet released may stand above it, as "## 0.12.0 (unreleased)".
        let newest = try #require(changelog.split(separator: "\n").first { $0.hasPrefix("## ") && !$0.hasSuffix(" (unreleased)") })
        #expect(newest == "## \(LayerKitVersion.number)")
        let runner = CommandRunner()
        #expect(runner.run(["--version"]) == 0)
        #expect(runner.out.hasPrefix("layerkit \(LayerKitVersion.number) (commit "))
    }

    /// The docs that name the version say this one: INSTALL.md's package line and its
    /// text, CLI.md's `--version` row.
    @Test func theDocsNameThePackagesVersion() throws {
        let number = LayerKitVersion.number
        for (document, text) in [("Docs/INSTALL.md", "from: \"\(number)\""),
                                 ("Docs/INSTALL.md", "`LayerKitVersion.number` (\(number),"),
                                 ("Docs/CLI.md", "`layerkit \(number) (commit")] {
            let shown = try String(contentsOf: DocOutputTests.root.appendingPathComponent(document), encoding: .utf8)
            #expect(shown.contains(text), "\(document) does not show \(text)")
        }
    }
}
