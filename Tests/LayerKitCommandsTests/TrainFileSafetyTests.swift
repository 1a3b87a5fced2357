import Foundation
import LayerKit
import Testing
@testable import LayerKitCommands

/// `layerkit train` given hostile files (issue 27): a run never writes over
/// a file it reads (a picture of the data folder, the model's external-data
/// file), and a checkpoint whose counts are near `Int.max` is refused,
/// naming the field, instead of trapping on overflow.
struct TrainFileSafetyTests {
    /// The fixture folder of `Scripts/generate_external_training_fixture.py`
    /// copied to a fresh folder: `net.onnx` and its external `scale.bin`.
    static func externalModelFolder() throws -> String {
        let directory = try CommandRunner.scratchDirectory() + "/ext"
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("LayerKitTests/Fixtures/external-training")
        try FileManager.default.copyItem(atPath: fixture.path, toPath: directory)
        return directory
    }

    /// The bytes of every file in `folder`, by name.
    static func contents(of folder: String) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            files[name] = try Data(contentsOf: URL(fileURLWithPath: folder).appendingPathComponent(name))
        }
        return files
    }

    @Test func aCheckpointOverAPictureOfTheDataFolderIsRefusedAndNothingIsWritten() throws {
        let directory = try CommandRunner.scratchDirectory()
        _ = try TrainCommandRunTests.pictures(in: "\(directory)/pics")
        try Data("3\n0\n4\n1\n1\n2\n0\n4".utf8).write(to: URL(fileURLWithPath: "\(directory)/pics/labels.txt"))
        let before = try Self.contents(of: "\(directory)/pics")
        let runner = CommandRunner()
        #expect(runner.run(["train", TrainCommandRunTests.fixture("swish_net.onnx"), "--data", "\(directory)/pics",
                            "--labels", "\(directory)/pics/labels.txt", "--loss", "ce", "--trainable", "last:1",
                            "--batch", "4", "--backend", "cpu", "--output", "\(directory)/out.onnx",
                            "--checkpoint", "\(directory)/pics/picture-0.png"]) == 1)
        #expect(runner.error == "layerkit: error: output \(directory)/pics/picture-0.png is also an input "
                + "(\(directory)/pics/picture-0.png); refusing to overwrite it\n", "\(runner.error)")
        #expect(try Self.contents(of: "\(directory)/pics") == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["pics"])
    }

    @Test func noOutputMayReplaceTheModelsExternalDataFile() throws {
        let folder = try Self.externalModelFolder()
        let directory = URL(fileURLWithPath: folder).deletingLastPathComponent().path
        try writeNPY([1, 2, 3, 4, -1, 0, 1, 2], shape: [2, 4], to: "\(directory)/x.npy")
        try writeNPY([0, 1, 2, 3, 4, 5, 6, 7], shape: [2, 4], to: "\(directory)/y.npy")
        let before = try Self.contents(of: folder)
        let words = { (extra: [String]) in
            ["train", "\(folder)/net.onnx", "--data", "\(directory)/x.npy", "--labels", "\(directory)/y.npy",
             "--loss", "mse", "--trainable", "bias", "--batch", "2", "--backend", "cpu"] + extra
        }
        // A symbolic link to it is the same file.
        try FileManager.default.createSymbolicLink(atPath: "\(directory)/link.bin", withDestinationPath: "\(folder)/scale.bin")
        for checkpoint in ["\(folder)/scale.bin", "\(directory)/link.bin"] {
            let runner = CommandRunner()
            #expect(runner.run(words(["--output", "\(directory)/out.onnx", "--checkpoint", checkpoint])) == 1)
            #expect(runner.error == "layerkit: error: output \(checkpoint) is also an input (\(folder)/scale.bin); "
                    + "refusing to overwrite it\n", "\(runner.error)")
        }
        #expect(try Self.contents(of: folder) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["ext", "link.bin", "x.npy", "y.npy"])
        // The same run with a file of its own trains and writes.
        let runner = CommandRunner()
        #expect(runner.run(words(["--output", "\(folder)/out.onnx", "--checkpoint", "\(directory)/c.ckpt"])) == 0,
                "\(runner.error)")
        #expect(try Self.contents(of: folder)["scale.bin"] == before["scale.bin"])
    }

    /// A checkpoint made by a real run, then given `change` and written
    /// again with a valid checksum: what `--resume` reads.
    static func hostileCheckpoint(_ change: (inout TrainingCheckpoint) -> Void) throws -> (directory: String, path: String) {
        let directory = try CommandRunner.scratchDirectory()
        let first = CommandRunner()
        #expect(first.run(TrainCommandRunTests.student(output: "\(directory)/a.onnx",
                                                       ["--epochs", "1", "--backend", "cpu", "--checkpoint",
                                                        "\(directory)/a.ckpt"])) == 0, "\(first.error)")
        var checkpoint = try TrainingCheckpoint(contentsOf: "\(directory)/a.ckpt")
        change(&checkpoint)
        try checkpoint.write(to: "\(directory)/hostile.ckpt")
        return (directory, "\(directory)/hostile.ckpt")
    }

    @Test(arguments: [
        ("beta.step", "optimizer state: beta.step is 9223372036854775807"),
        ("step", "optimizer state: step is 9223372036854775807"),
        ("epoch", "optimizer state: epoch is 9223372036854775807"),
    ])
    func aCounterNearIntMaxIsRefusedNamingItNotATrap(_ counter: String, message: String) throws {
        let (directory, path) = try Self.hostileCheckpoint { checkpoint in
            #expect(checkpoint.counters[counter] != nil, "\(checkpoint.counters)")
            checkpoint.counters[counter] = .max
        }
        let runner = CommandRunner()
        #expect(runner.run(TrainCommandRunTests.student(output: "\(directory)/b.onnx",
                                                        ["--epochs", "2", "--backend", "cpu", "--resume", path])) == 1)
        #expect(runner.error == "layerkit: error: checkpoint '\(path)': \(message); expected a count from 0 to "
                + "9007199254740992 (2^53)\n", "\(runner.error)")
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/b.onnx"))
    }

    @Test func aStepNearIntMaxIsRefusedNamingItNotATrap() throws {
        let (directory, path) = try Self.hostileCheckpoint { $0.step = .max }
        let runner = CommandRunner()
        #expect(runner.run(TrainCommandRunTests.student(output: "\(directory)/b.onnx",
                                                        ["--epochs", "2", "--backend", "cpu", "--resume", path])) == 1)
        #expect(runner.error == "layerkit: error: checkpoint '\(path)': step is 9223372036854775807; expected a count "
                + "from 0 to 9007199254740992 (2^53)\n", "\(runner.error)")
        #expect(!FileManager.default.fileExists(atPath: "\(directory)/b.onnx"))
    }
}
