// Shared helpers for LayerKit's slice-image shaders.
//
// A slice image is an rgba16f 2D-array image: channel c of batch item n lives
// in lane c % 4 of array layer n * slices + c / 4, with slices = (C + 3) / 4.

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

// The image geometry every slice-image shader receives first in its push constants.
#define LK_SHAPE_FIELDS uint width; uint height; uint channels; uint slices; uint layers
