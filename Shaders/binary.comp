#version 450
// Element-wise binary ops with ONNX multidirectional broadcasting.
//
// One invocation per output texel. Each operand has the output's rank; an
// extent of 1 (width, height, batch) is read at coordinate 0, and an operand
// with one channel broadcasts its lane 0 of slice 0 to all four lanes.
// LayerKit defines LK_OP(a, b) (vec4 in, vec4 out); alone the shader adds.
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"
#include "ops.glsl"
#include "broadcast.glsl"

#ifndef LK_OP
#define LK_OP(a, b) ((a) + (b))
#endif

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray lhs;
layout(rgba16f, binding = 1) readonly uniform image2DArray rhs;
layout(rgba16f, binding = 2) writeonly uniform image2DArray destination;
layout(push_constant) uniform Shape {
    LK_SHAPE_FIELDS;  // of the output
    uint lhsWidth; uint lhsHeight; uint lhsChannels; uint lhsBatch;
    uint rhsWidth; uint rhsHeight; uint rhsChannels; uint rhsBatch;
} shape;

// IEEE 754 division, which GLSL leaves undefined for a zero divisor:
// x / +-0 is +-inf with the product of the signs, 0 / 0 and NaN / 0 are NaN.
float lk_div(float a, float b) {
    if (b != 0.0) return a / b;
    if (a == 0.0 || isnan(a)) return uintBitsToFloat(0x7FC00000u);
    return uintBitsToFloat(((floatBitsToUint(a) ^ floatBitsToUint(b)) & 0x80000000u) | 0x7F800000u);
}

vec4 lk_div(vec4 a, vec4 b) {
    return vec4(lk_div(a.x, b.x), lk_div(a.y, b.y), lk_div(a.z, b.z), lk_div(a.w, b.w));
}

// C's fmod (sign of a) and Python's % (sign of b): a - trunc(a / b) * b,
// corrected by one b where the quotient rounded across an integer. NaN for
// b = 0 or an infinite a, a itself for an infinite b (C99), as on the CPU.
vec4 lk_fmod(vec4 a, vec4 b) {
    vec4 m = abs(b);
    vec4 r = abs(a) - trunc(abs(a) / m) * m;
    r = mix(r, r - m, greaterThanEqual(r, m));
    r = mix(r, r + m, lessThan(r, vec4(0.0)));
    r = mix(r, abs(a), isinf(m));
    r = mix(r, -r, lessThan(a, vec4(0.0)));
    bvec4 undefined = bvec4(uvec4(equal(m, vec4(0.0))) | uvec4(isinf(a)) | uvec4(lk_either_nan(a, b)));
    return mix(r, vec4(LK_NAN), undefined);
}

// Python's %: a zero remainder is a zero of b's sign (ONNX Mod-28, fmod 0).
vec4 lk_imod(vec4 a, vec4 b) {
    vec4 r = lk_fmod(a, b);
    bvec4 flip = bvec4(uvec4(notEqual(r, vec4(0.0))) & uvec4(notEqual(lessThan(r, vec4(0.0)), lessThan(b, vec4(0.0)))));
    vec4 signedZero = uintBitsToFloat(floatBitsToUint(b) & uvec4(0x80000000u));
    return mix(mix(r, r + b, flip), signedZero, equal(r, vec4(0.0)));
}

// Truth values: 1 where non-zero (NaN included), else 0.
vec4 lk_truth(vec4 a) { return vec4(notEqual(a, vec4(0.0))); }

void main() {
    uvec3 id = gl_GlobalInvocationID;
    if (id.x >= shape.width || id.y >= shape.height || id.z >= shape.layers) return;
    uint n = id.z / shape.slices;
    uint s = id.z % shape.slices;
    uvec4 lhsExtents = uvec4(shape.lhsWidth, shape.lhsHeight, shape.lhsChannels, shape.lhsBatch);
    uvec4 rhsExtents = uvec4(shape.rhsWidth, shape.rhsHeight, shape.rhsChannels, shape.rhsBatch);
    vec4 a = imageLoad(lhs, lk_operand_texel(lhsExtents, id, n, s));
    vec4 b = imageLoad(rhs, lk_operand_texel(rhsExtents, id, n, s));
    if (shape.lhsChannels == 1u) a = a.xxxx;
    if (shape.rhsChannels == 1u) b = b.xxxx;
    vec4 y = LK_OP(a, b);
    // Padding lanes stay zero (0 / 0 there would be NaN).
    y = mix(vec4(0.0), y, lk_channel_lanes(s, shape.channels));
    imageStore(destination, ivec3(id), lk_round_half(y));
}
