import Testing
@testable import LayerKit

/// `ParityReport`'s one-line description: verdict and key figures.
struct ParityReportTests {
    @Test func aPassingReportPrintsItsFiguresOnOneLine() throws {
        let cpu = try Tensor(shape: [4], values: [1, 2, 3, 4])
        let report = try ParityReport(gpu: cpu, cpu: cpu)
        #expect(report.description == "PASS: 4 elements, max abs 0.000e+00, max rel 0.000e+00, max fp16 ulps 0, "
                + "NMSE 0.000e+00, 0 non-finite mismatches (tolerance 0.001)")
    }

    @Test func aFailingReportCountsTheFailuresAndNamesTheWorst() throws {
        let cpu = try Tensor(shape: [3], values: [1, 2, 3])
        let gpu = try Tensor(shape: [3], values: [1, 2.5, .nan])
        let report = try ParityReport(gpu: gpu, cpu: cpu)
        #expect(report.description == "FAIL: 2 of 3 elements outside the tolerance, max abs 5.000e-01, "
                + "max rel 2.500e-01, max fp16 ulps 256, NMSE 5.000e-02, 1 non-finite mismatches, worst #1 "
                + "(tolerance 0.001)")
        #expect(!report.description.contains("\n"))
    }
}
