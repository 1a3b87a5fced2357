// LayerKit's GLSL helpers for slice-image compute shaders: its own shaders
// and custom kernels (`#include "layerkit.glsl"` in a source given to
// GPUContext.makeKernel; see Docs/CUSTOM_KERNELS.md) use the same ones.
//
// A slice image is an rgba16f 2D-array image: channel c of batch item n lives
// in lane c % 4 of array layer n * slices + c / 4, with slices = (C + 3) / 4.
// Lanes past C in the last slice of each item are padding and hold zero.
//
//   LK_WORKGROUP_SIZE       the one workgroup size (8x8x1 texels), as
//                           `LK_WORKGROUP_SIZE;` in place of a layout line
//   LK_SHAPE_FIELDS         the geometry every push-constant block starts
//                           with (Swift: ShapeConstants)
//   lk_item_of, lk_slice_of batch item and slice of an array layer
//   lk_channel_lanes        which lanes of a slice hold channels
//   lk_round_half           round to the nearest fp16 before imageStore

// Rounds to the nearest fp16 value (ties to even), in fp32. The driver's own
// fp32 -> fp16 conversion on imageStore may truncate instead (lavapipe's
// appeared to), which alone costs up to 1 fp16 ulp ~ 9.8e-4 relative; a value
// that is already exactly representable converts exactly under any mode.
float lk_round_half(float v) {
    if (isnan(v)) return v;
    float a = abs(v);
    float r;
    if (a < 6.103515625e-05) {
        // fp16 subnormals: a fixed quantum of 2^-24.
        r = roundEven(a * 16777216.0) * 5.9604644775390625e-08;
    } else {
        // Round the fp32 mantissa to fp16's 10 bits; a carry bumps the exponent.
        uint b = floatBitsToUint(a);
        b = (b + 0xFFFu + ((b >> 13) & 1u)) & ~0x1FFFu;
        r = uintBitsToFloat(b);
        if (r > 65504.0) r = uintBitsToFloat(0x7F800000u);  // past fp16's max: inf
    }
    return uintBitsToFloat(floatBitsToUint(r) | (floatBitsToUint(v) & 0x80000000u));
}

vec4 lk_round_half(vec4 v) {
    return vec4(lk_round_half(v.x), lk_round_half(v.y), lk_round_half(v.z), lk_round_half(v.w));
}

// The image geometry every slice-image shader receives first in its push
// constants: W, H, C, (C + 3) / 4, N * slices.
#define LK_SHAPE_FIELDS uint width; uint height; uint channels; uint slices; uint layers

// One invocation per texel: 8x8 texels of one array layer a workgroup. LayerKit
// reads the size back from the compiled shader, so this is its one declaration.
#define LK_WORKGROUP_SIZE layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in

// The batch item and the slice of array layer `layer`.
uint lk_item_of(uint layer, uint slices) { return layer / slices; }
uint lk_slice_of(uint layer, uint slices) { return layer % slices; }

// Which lanes of slice `slice` hold channels (false: padding, store zero).
bvec4 lk_channel_lanes(uint slice, uint channels) {
    return lessThan(uvec4(slice * 4u) + uvec4(0u, 1u, 2u, 3u), uvec4(channels));
}
