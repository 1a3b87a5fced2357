#version 450
// Softmax, LogSoftmax or Hardmax along one axis of a slice image.
//
// LK_SOFTMAX_ALONG 0, the channel axis: one invocation per (x, y, batch
// item) walks the item's slices once for the maximum, once for the sum of
// exp(v - max), then writes every slice, in fp32. Padding lanes take no part
// and stay zero.
// LK_SOFTMAX_ALONG 1 (the width) or 2 (the height): one invocation per row
// (column) of an array layer walks it three times the same way, each lane
// its own channel's line (attention scores [B, heads, S, S] along the last
// axis: every lane a query row).
// LK_SOFTMAX_KIND: 0 softmax, 1 log softmax, 2 hardmax (1 at the first
// largest value).
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"

#ifndef LK_SOFTMAX_KIND
#define LK_SOFTMAX_KIND 0
#endif
#ifndef LK_SOFTMAX_ALONG
#define LK_SOFTMAX_ALONG 0
#endif

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray source;
layout(rgba16f, binding = 1) writeonly uniform image2DArray destination;
layout(push_constant) uniform Shape { LK_SHAPE_FIELDS; } shape;

#if LK_SOFTMAX_ALONG == 0
void main() {
    uvec3 id = gl_GlobalInvocationID;
    if (id.x >= shape.width || id.y >= shape.height || id.z * shape.slices >= shape.layers) return;
    uint base = id.z * shape.slices;
#if LK_SOFTMAX_KIND == 2
    float m = uintBitsToFloat(0xFF800000u);
    uint best = 0u;
    for (uint s = 0u; s < shape.slices; s++) {
        vec4 v = imageLoad(source, ivec3(id.xy, base + s));
        for (uint lane = 0u; lane < 4u; lane++) {
            uint c = s * 4u + lane;
            if (c < shape.channels && (c == 0u || v[lane] > m)) { m = v[lane]; best = c; }
        }
    }
    for (uint s = 0u; s < shape.slices; s++) {
        vec4 e = vec4(equal(uvec4(s * 4u) + uvec4(0u, 1u, 2u, 3u), uvec4(best)));
        imageStore(destination, ivec3(id.xy, base + s), e);
    }
#else
    float m = uintBitsToFloat(0xFF800000u);
    for (uint s = 0u; s < shape.slices; s++) {
        vec4 v = mix(vec4(m), imageLoad(source, ivec3(id.xy, base + s)), lk_channel_lanes(s, shape.channels));
        m = max(m, max(max(v.x, v.y), max(v.z, v.w)));
    }
    float sum = 0.0;
    for (uint s = 0u; s < shape.slices; s++) {
        vec4 e = mix(vec4(0.0), exp(imageLoad(source, ivec3(id.xy, base + s)) - m), lk_channel_lanes(s, shape.channels));
        sum += e.x + e.y + e.z + e.w;
    }
#if LK_SOFTMAX_KIND == 1
    float logSum = log(sum);
#endif
    for (uint s = 0u; s < shape.slices; s++) {
#if LK_SOFTMAX_KIND == 1
        vec4 e = (imageLoad(source, ivec3(id.xy, base + s)) - m) - logSum;
#else
        vec4 e = exp(imageLoad(source, ivec3(id.xy, base + s)) - m) / sum;
#endif
        e = mix(vec4(0.0), e, lk_channel_lanes(s, shape.channels));
        imageStore(destination, ivec3(id.xy, base + s), lk_round_half(e));
    }
#endif
}
#else
#if LK_SOFTMAX_ALONG == 1
#define LK_LENGTH shape.width
#define LK_LINES shape.height
#define LK_AT(i) ivec3(i, id.x, id.z)
#else
#define LK_LENGTH shape.height
#define LK_LINES shape.width
#define LK_AT(i) ivec3(id.x, i, id.z)
#endif
void main() {
    uvec3 id = gl_GlobalInvocationID;
    if (id.x >= LK_LINES || id.y > 0u || id.z >= shape.layers) return;
    bvec4 lanes = lk_channel_lanes(lk_slice_of(id.z, shape.slices), shape.channels);
    vec4 m = vec4(uintBitsToFloat(0xFF800000u));
#if LK_SOFTMAX_KIND == 2
    uvec4 best = uvec4(0u);
    for (uint i = 0u; i < LK_LENGTH; i++) {
        vec4 v = imageLoad(source, LK_AT(i));
        bvec4 larger = greaterThan(v, m);
        m = mix(m, v, larger);
        best = mix(best, uvec4(i), larger);
    }
    for (uint i = 0u; i < LK_LENGTH; i++) {
        imageStore(destination, LK_AT(i), mix(vec4(0.0), vec4(equal(uvec4(i), best)), lanes));
    }
#else
    for (uint i = 0u; i < LK_LENGTH; i++) m = max(m, imageLoad(source, LK_AT(i)));
    vec4 sum = vec4(0.0);
    for (uint i = 0u; i < LK_LENGTH; i++) sum += exp(imageLoad(source, LK_AT(i)) - m);
#if LK_SOFTMAX_KIND == 1
    vec4 logSum = log(sum);
#endif
    for (uint i = 0u; i < LK_LENGTH; i++) {
#if LK_SOFTMAX_KIND == 1
        vec4 e = (imageLoad(source, LK_AT(i)) - m) - logSum;
#else
        vec4 e = exp(imageLoad(source, LK_AT(i)) - m) / sum;
#endif
        imageStore(destination, LK_AT(i), lk_round_half(mix(vec4(0.0), e, lanes)));
    }
#endif
}
#endif
