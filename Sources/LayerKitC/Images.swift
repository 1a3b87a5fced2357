import CLayerKitAPI
import Foundation
import LayerKit

@c @implementation
public func lk_image_load(_ context: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ resize: UnsafePointer<CChar>?,
                          _ centerCrop: UnsafePointer<CChar>?, _ interpolation: UnsafePointer<CChar>?,
                          _ normalize: UnsafePointer<CChar>?, _ channelOrder: UnsafePointer<CChar>?, _ scale: Float,
                          _ layout: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> lk_status {
    out?.pointee = nil
    return withContext(context) { _ in
        guard out != nil else { throw CAPIError.invalidArgument("the output pointer is NULL") }
        let path = try requireString(path, "the path")
        guard !path.isEmpty else { throw CAPIError.invalidArgument("the path is empty") }
        /// An optional string argument, parsed when given.
        func option<T>(_ pointer: UnsafePointer<CChar>?, _ what: String, _ parse: (String) throws -> T) throws -> T? {
            guard pointer != nil else { return nil }
            return try parse(try requireString(pointer, what))
        }
        /// One of `T`'s words.
        func word<T: RawRepresentable & CaseIterable>(_ text: String, _ what: String) throws -> T where T.RawValue == String {
            guard let value = T(rawValue: text.lowercased()) else {
                throw CAPIError.invalidArgument("\(what) '\(text)': expected " + T.allCases.map(\.rawValue).joined(separator: ", "))
            }
            return value
        }
        guard scale == 0 || (scale.isFinite && scale > 0) else {
            throw CAPIError.invalidArgument("scale \(scale): expected a positive number, or 0 for 1")
        }
        let options = ImageInputOptions(
            resize: try option(resize, "resize") { try ImageInputOptions.Resize(parsing: $0) },
            centerCrop: try option(centerCrop, "center_crop") { try ImageInputOptions.Size(parsing: $0, option: "center_crop") },
            interpolation: try option(interpolation, "interpolation") { try word($0, "interpolation") } ?? .bilinear,
            normalization: try option(normalize, "normalize") { try PixelNormalization(parsing: $0) } ?? .unit,
            channelOrder: try option(channelOrder, "channel_order") { try word($0, "channel_order") } ?? .rgb,
            scale: scale == 0 ? 1 : scale,
            layout: try option(layout, "layout") { try word($0, "layout") } ?? .nchw)
        try Handle.store(try options.load(path), in: out)
    }
}
