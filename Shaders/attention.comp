#version 450
// ONNX Attention, flash-style: a workgroup takes one batch item and a tile of
// query rows (64 texel rows: in 4-D Q [B, heads, S, d] a texel holds 4 heads
// of one row, in 3-D Q [B, S, heads * d] 4 rows of one head) and streams the
// keys and values through shared memory a block at a time, with an online
// softmax in fp32: per lane a running maximum, a running sum and the output
// accumulator in registers, rescaled as the maximum grows. The score matrix
// is never written. Each lane is one (query head, query row) pair; its
// key/value head is head / (qHeads / kvHeads) (grouped-query attention).
//
// The bias of query row i and key j is ONNX's: -inf for j >= the valid keys
// (nonpad_kv_seqlen), past the causal frontier j > i + offset, outside the
// sliding window and past the mask's keys; else the mask's value (a boolean
// mask arrives as its 0 / -inf bias). A row with no allowed key is zero.
// Keys j < pastLength come from the past caches, the others from K and V.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "layerkit.glsl"

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray queries;
layout(rgba16f, binding = 1) readonly uniform image2DArray keys;
layout(rgba16f, binding = 2) readonly uniform image2DArray values;
layout(rgba16f, binding = 3) writeonly uniform image2DArray destination;
// Per batch item, the count of valid keys (nonpad_kv_seqlen), exact in float.
layout(std430, binding = 4) readonly buffer ValidKeys { float validKeys[]; };
// The mask and the past caches as their images' raw fp16 texels ([layer][y][x][lane],
// two lanes a uint): a dispatch may bind only 4 storage images. Bound to ValidKeys
// when the node has no mask or no past caches.
layout(std430, binding = 5) readonly buffer MaskTexels { uint maskTexels[]; };
layout(std430, binding = 6) readonly buffer PastKeyTexels { uint pastKeyTexels[]; };
layout(std430, binding = 7) readonly buffer PastValueTexels { uint pastValueTexels[]; };

// LK_SHAPE_FIELDS are Y's image. flags: 1 packed (3-D Q, K, V and Y), 2 causal,
// 4 mask, 8 past caches, 16 validKeys given. The mask's shape is right-aligned to
// rank 4 (maskB, maskH, maskS, maskT), maskRank its own rank.
layout(push_constant) uniform Constants {
    LK_SHAPE_FIELDS;
    uint qLength; uint kvLength; uint pastLength;
    uint qHeads; uint kvHeads;
    uint flags;
    int windowLeft; int windowRight;
    float scale; float softcap;
    uint maskRank; uint maskB; uint maskH; uint maskS; uint maskT;
} c;

// Texel rows of a tile (the workgroup's 8x8 invocations) and keys per block.
#define UNITS 64u
#define KEY_BLOCK 8u
// The head sizes, a variant per pair (at most 128): the register arrays are
// this long, and every loop but the one over key blocks has a constant trip
// count and is unrolled. Unrolling matters beyond speed: llvmpipe (lavapipe)
// ends every loop of an invocation after 65,535 iterations in all, which
// per-element loops over 2,048 keys exceeded.
#ifndef LK_HEAD_SIZE
#define LK_HEAD_SIZE 64
#endif
#ifndef LK_VALUE_HEAD_SIZE
#define LK_VALUE_HEAD_SIZE 64
#endif
#define HEAD uint(LK_HEAD_SIZE)
#define VALUE_HEAD uint(LK_VALUE_HEAD_SIZE)
#define MAX_HEAD max(HEAD, VALUE_HEAD)

// One block of keys, then of values: lane l of [key][element] belongs to lane
// l's key/value head. At most 8 x 128 vec4 = 16 KiB, Vulkan's guaranteed minimum.
shared vec4 block[KEY_BLOCK * MAX_HEAD];

// At or below this a score or bias counts as -inf: a finite stand-in keeps
// exp() and max() free of inf - inf (fp16 stores -inf for anything below -65504).
const float MASKED = -3.0e38;

bool packed() { return (c.flags & 1u) != 0u; }

// Lane `lane` of texel `texel` of raw fp16 texels (two lanes a uint, the first in the low half).
#define LK_TEXEL_LANE(texels, texel, lane) unpackHalf2x16(texels[(texel) * 2u + (lane) / 2u])[(lane) % 2u]

// Lane l of the result: element d of key (or value) head kvHead[l] at key j
// of batch item b, from the past cache (j < pastLength, 4-D raw texels) or the
// current K or V (4-D, or 3-D with `size` elements a head). `uniformHeads`: the
// lanes' heads are the lanes of one slice (no grouping), one texel holds them all.
#define LK_LOAD_KV(current, past, size) { \
    vec4 r = vec4(0.0); \
    uint kvSlices = (c.kvHeads + 3u) / 4u; \
    if (j < c.pastLength) { \
        [[unroll]] for (uint l = 0u; l < 4u; l++) { \
            uint texel = ((b * kvSlices + kvHead[l] / 4u) * c.pastLength + j) * size + d; \
            r[l] = LK_TEXEL_LANE(past, texel, kvHead[l] % 4u); \
        } \
        return r; \
    } \
    uint k = j - c.pastLength; \
    if (packed()) { \
        uint seqSlices = (c.kvLength + 3u) / 4u; \
        return vec4(imageLoad(current, ivec3(0, kvHead.x * size + d, b * seqSlices + k / 4u))[k % 4u]); \
    } \
    if (uniformHeads) return imageLoad(current, ivec3(d, k, b * kvSlices + kvHead.x / 4u)); \
    [[unroll]] for (uint l = 0u; l < 4u; l++) r[l] = imageLoad(current, ivec3(d, k, b * kvSlices + kvHead[l] / 4u))[kvHead[l] % 4u]; \
    return r; }

vec4 keyLanes(uint b, uvec4 kvHead, bool uniformHeads, uint j, uint d) LK_LOAD_KV(keys, pastKeyTexels, HEAD)
vec4 valueLanes(uint b, uvec4 kvHead, bool uniformHeads, uint j, uint d) LK_LOAD_KV(values, pastValueTexels, VALUE_HEAD)

// The mask's value for query row i of head h of batch item b and key j: the
// axes of size 1 broadcast, the tensor's own rank-r index read as NCHW
// (trailing axes 1, as every slice image).
float maskAt(uint b, uint h, uint i, uint j) {
    uint index[4] = uint[4](c.maskB == 1u ? 0u : b, c.maskH == 1u ? 0u : h, c.maskS == 1u ? 0u : i, j);
    uint dims[4] = uint[4](c.maskB, c.maskH, c.maskS, c.maskT);
    uint first = 4u - c.maskRank;
    uint t[4] = uint[4](0u, 0u, 0u, 0u);
    [[unroll]] for (uint k = 0u; k < 4u; k++) t[k] = k < c.maskRank ? index[min(first + k, 3u)] : 0u;
    // The image's N, C, H, W: the tensor's extents, trailing ones 1.
    uint extent[4] = uint[4](1u, 1u, 1u, 1u);
    [[unroll]] for (uint k = 0u; k < 4u; k++) extent[k] = k < c.maskRank ? dims[min(first + k, 3u)] : 1u;
    uint slices = (extent[1] + 3u) / 4u;
    uint texel = ((t[0] * slices + t[1] / 4u) * extent[2] + t[2]) * extent[3] + t[3];
    return LK_TEXEL_LANE(maskTexels, texel, t[1] % 4u);
}

void main() {
    uint unit = gl_WorkGroupID.x * UNITS + gl_LocalInvocationIndex;
    uint b = gl_WorkGroupID.z;
    uvec4 lanes = uvec4(0u, 1u, 2u, 3u);
    // Each lane's query head and row; `live` lanes are inside Q.
    uvec4 head = packed() ? uvec4(gl_WorkGroupID.y) : gl_WorkGroupID.y * 4u + lanes;
    uvec4 row = packed() ? unit * 4u + lanes : uvec4(unit);
    bvec4 live = bvec4(uvec4(lessThan(head, uvec4(c.qHeads))) * uvec4(lessThan(row, uvec4(c.qLength))));
    uint group = c.qHeads / c.kvHeads;
    uvec4 kvHead = min(head, uvec4(c.qHeads - 1u)) / group;
    bool uniformHeads = !packed() && group == 1u;
    uint total = c.pastLength + c.kvLength;

    // The workgroup's rows, for the key range every lane shares.
    uint rowsPerGroup = packed() ? UNITS * 4u : UNITS;
    int firstRow = int(gl_WorkGroupID.x * rowsPerGroup);
    int endRow = min(firstRow + int(rowsPerGroup), int(c.qLength));
    uint valid = (c.flags & 16u) != 0u ? uint(validKeys[b]) : total;
    // The count of valid keys before the first query row (ONNX's causal offset).
    int offset = (c.flags & 8u) != 0u ? int(c.pastLength) : ((c.flags & 16u) != 0u ? int(valid) - int(c.qLength) : 0);
    // Keys no row of the tile may attend are skipped.
    int start = 0;
    int end = int(min(total, valid));
    if ((c.flags & 4u) != 0u) end = min(end, int(c.maskT));
    if ((c.flags & 2u) != 0u) end = min(end, max(0, endRow + offset));
    if (c.windowRight >= 0) end = min(end, max(0, endRow + offset + c.windowRight));
    if (c.windowLeft >= 0) start = max(0, firstRow + offset - c.windowLeft);

    // This invocation's queries, in registers.
    vec4 q[HEAD];
    uint qSlices = packed() ? (c.qLength + 3u) / 4u : (c.qHeads + 3u) / 4u;
    bool anyLive = any(live);
    [[unroll]] for (uint d = 0u; d < HEAD; d++) {
        q[d] = !anyLive ? vec4(0.0) : packed()
            ? imageLoad(queries, ivec3(0, head.x * HEAD + d, b * qSlices + unit))
            : imageLoad(queries, ivec3(d, unit, b * qSlices + gl_WorkGroupID.y));
    }
    vec4 acc[VALUE_HEAD];
    [[unroll]] for (uint e = 0u; e < VALUE_HEAD; e++) acc[e] = vec4(0.0);
    vec4 runningMax = vec4(MASKED), runningSum = vec4(0.0);
    bvec4 allowed = bvec4(false);

    for (int j0 = start; j0 < end; j0 += int(KEY_BLOCK)) {
        uint cols = min(KEY_BLOCK, uint(end - j0));
        [[unroll]] for (uint x0 = 0u; x0 < KEY_BLOCK * HEAD; x0 += UNITS) {
            uint x = x0 + gl_LocalInvocationIndex, col = x / HEAD, d = x % HEAD;
            if (col < cols) block[col * MAX_HEAD + d] = keyLanes(b, kvHead, uniformHeads, uint(j0) + col, d);
        }
        barrier();
        vec4 scores[KEY_BLOCK];
        vec4 blockMax = vec4(MASKED);
        [[unroll]] for (uint col = 0u; col < KEY_BLOCK; col++) {
            vec4 s = vec4(0.0);
            [[unroll]] for (uint d = 0u; d < HEAD; d++) s += q[d] * block[col * MAX_HEAD + d];
            s *= c.scale;
            if (c.softcap > 0.0) s = c.softcap * tanh(s / c.softcap);
            int j = j0 + int(col);
            [[unroll]] for (uint l = 0u; l < 4u; l++) {
                int position = int(row[l]) + offset;
                bool ok = live[l] && col < cols && uint(j) < valid;
                if ((c.flags & 2u) != 0u && j > position) ok = false;
                if (c.windowLeft >= 0 && position - j > c.windowLeft) ok = false;
                if (c.windowRight >= 0 && j - position > c.windowRight) ok = false;
                if (ok && (c.flags & 4u) != 0u) {
                    float bias = uint(j) < c.maskT ? maskAt(b, head[l], row[l], uint(j)) : MASKED;
                    ok = bias > MASKED;
                    s[l] += bias;
                }
                if (ok) allowed[l] = true;
                s[l] = ok ? s[l] : MASKED;
            }
            scores[col] = s;
            blockMax = max(blockMax, s);
        }
        barrier();
        [[unroll]] for (uint x0 = 0u; x0 < KEY_BLOCK * VALUE_HEAD; x0 += UNITS) {
            uint x = x0 + gl_LocalInvocationIndex, col = x / VALUE_HEAD, e = x % VALUE_HEAD;
            // A key past the end is zero, not garbage (its weight is 0, but 0 x NaN is NaN).
            if (col < KEY_BLOCK) block[col * MAX_HEAD + e] = col < cols ? valueLanes(b, kvHead, uniformHeads, uint(j0) + col, e)
                                                                       : vec4(0.0);
        }
        barrier();
        // Rescale what the earlier blocks summed to the new maximum, then add this block's P V.
        vec4 newMax = max(runningMax, blockMax);
        vec4 correction = exp(runningMax - newMax);
        runningSum *= correction;
        [[unroll]] for (uint e = 0u; e < VALUE_HEAD; e++) acc[e] *= correction;
        [[unroll]] for (uint col = 0u; col < KEY_BLOCK; col++) {
            vec4 p = exp(scores[col] - newMax);
            // A masked key adds nothing, also while its row has no allowed key yet.
            p = mix(p, vec4(0.0), lessThanEqual(scores[col], vec4(MASKED)));
            runningSum += p;
            [[unroll]] for (uint e = 0u; e < VALUE_HEAD; e++) acc[e] += p * block[col * MAX_HEAD + e];
        }
        runningMax = newMax;
        barrier();
    }

    // A lane with no allowed key (or a zero sum) is zero, as ONNX specifies; padding lanes too.
    bvec4 nonzero = bvec4(uvec4(allowed) * uvec4(greaterThan(runningSum, vec4(0.0))));
    vec4 inverse = mix(vec4(0.0), 1.0 / max(runningSum, vec4(1e-30)), nonzero);
    uint ySlices = packed() ? (c.qLength + 3u) / 4u : (c.qHeads + 3u) / 4u;
    if (unit >= (packed() ? ySlices : c.qLength)) return;
    [[unroll]] for (uint e = 0u; e < VALUE_HEAD; e++) {
        vec4 y = acc[e] * inverse;
        if (packed()) imageStore(destination, ivec3(0, head.x * VALUE_HEAD + e, b * ySlices + unit), lk_round_half(y));
        else imageStore(destination, ivec3(e, unit, b * ySlices + gl_WorkGroupID.y), lk_round_half(y));
    }
}
