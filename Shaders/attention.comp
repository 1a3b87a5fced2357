#version 450
// ONNX Attention, flash-style: a workgroup takes one batch item and a tile of
// 16 texel rows of Q (in 4-D Q [B, heads, S, d] a texel holds 4 heads of one
// row, in 3-D Q [B, S, heads * d] 4 rows of one head) and streams the keys
// and values through shared memory 8 keys a block, with an online softmax in
// fp32: per lane a running maximum, a running sum and the output accumulator
// in registers, rescaled as the maximum grows. The score matrix is never
// written. Each lane is one (query head, query row) pair; its key/value head
// is head / (qHeads / kvHeads) (grouped-query attention).
//
// The head is split over 4 invocations (parts) per texel row: part p holds
// elements d = 4i + p of the queries and of the output accumulator, so each
// invocation keeps at most 32 texels of each (head sizes up to 128, one shader
// for all). The parts' partial dot products meet in shared memory. Loops over
// the head are not unrolled, only those over a block's 8 keys and a texel's 4
// lanes: llvmpipe (lavapipe) compiles unrolled head loops for minutes. llvmpipe
// also ends a shader's loops after 65,535 back-edges in all (gallivm's loop
// limiter, one counter per invocation for every loop), which bounds the keys:
// Attention+GPU.swift counts this shader's iterations and keeps them under it.
//
// The bias of query row i and key j is ONNX's: -inf for j >= the valid keys
// (nonpad_kv_seqlen), past the causal frontier j > i + offset, outside the
// sliding window and past the mask's keys; else the mask's value (a boolean
// mask arrives as its 0 / -inf bias). A row with no allowed key is zero, or
// NaN with flag 32 (what Softmax then MatMul make of it in a fused graph).
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
// 4 mask, 8 past caches, 16 validKeys given, 32 fully masked rows are NaN. The
// mask's shape is right-aligned to rank 4 (maskB, maskH, maskS, maskT), maskRank
// its own rank.
layout(push_constant) uniform Constants {
    LK_SHAPE_FIELDS;
    uint qLength; uint kvLength; uint pastLength;
    uint qHeads; uint kvHeads;
    uint headSize; uint valueHeadSize;
    uint flags;
    int windowLeft; int windowRight;
    float scale; float softcap;
    uint maskRank; uint maskB; uint maskH; uint maskS; uint maskT;
} c;

// Texel rows of a tile, parts a head is split into (16 x 4: the 8x8 workgroup),
// keys per block.
#define ROWS 16u
#define PARTS 4u
#define KEY_BLOCK 8u
// Texels of the head each part keeps, and the widest block row.
#define CHUNK 32u
#define HEAD_SPAN (PARTS * CHUNK)

// One block of keys, then of values, [key][element]: lane l of a texel belongs
// to lane l's key/value head. 8 x 128 vec4 = 16 KiB at most.
shared vec4 block[KEY_BLOCK * HEAD_SPAN];
// The parts' partial dot products, [part][row][key], and each query's bias
// against the block's keys, [row][key] (MASKED: not allowed).
shared vec4 partial[PARTS * ROWS * KEY_BLOCK];
shared float bias[ROWS * KEY_BLOCK * 4u];

// At or below this a score or bias counts as -inf: a finite stand-in keeps
// exp() and max() free of inf - inf (fp16 stores -inf for anything below -65504).
const float MASKED = -3.0e38;

bool packed() { return (c.flags & 1u) != 0u; }
bool hasFlag(uint flag) { return (c.flags & flag) != 0u; }

// Lane `lane` of texel `texel` of raw fp16 texels (two lanes a uint, the first in the low half).
float texelLane(uint texel, uint lane, uint which) {
    uint index = texel * 2u + lane / 2u;
    // Branches, not a select: only the buffer asked for is read at `index`.
    uint word;
    if (which == 0u) word = maskTexels[index];
    else if (which == 1u) word = pastKeyTexels[index];
    else word = pastValueTexels[index];
    return unpackHalf2x16(word)[lane % 2u];
}

// A texel of V (value) or K: a branch, as `at` may be past the other's extent.
vec4 loadKeyOrValue(bool value, ivec3 at) {
    if (value) return imageLoad(values, at);
    return imageLoad(keys, at);
}

// Element d of key (value: the values) j, for the 4 lanes of a texel row whose
// key/value heads are kvHead: from the past cache (j < pastLength, 4-D raw
// texels) or the current K or V (4-D, or 3-D with `size` elements a head).
vec4 keyOrValue(bool value, uint b, uvec4 kvHead, uint j, uint d) {
    uint size = value ? c.valueHeadSize : c.headSize;
    uint kvSlices = (c.kvHeads + 3u) / 4u;
    vec4 r = vec4(0.0);
    if (j < c.pastLength) {
        [[unroll]] for (uint l = 0u; l < 4u; l++) {
            r[l] = texelLane(((b * kvSlices + kvHead[l] / 4u) * c.pastLength + j) * size + d, kvHead[l] % 4u,
                             value ? 2u : 1u);
        }
        return r;
    }
    uint k = j - c.pastLength;
    if (packed()) {
        ivec3 at = ivec3(0, kvHead.x * size + d, b * ((c.kvLength + 3u) / 4u) + k / 4u);
        return vec4(loadKeyOrValue(value, at)[k % 4u]);
    }
    [[unroll]] for (uint l = 0u; l < 4u; l++) {
        r[l] = loadKeyOrValue(value, ivec3(d, k, b * kvSlices + kvHead[l] / 4u))[kvHead[l] % 4u];
    }
    return r;
}

// Fills the block with keys (or values) j0 to j0 + cols - 1 and zeros past them
// and past the head, for the workgroup's lanes (kvHead).
void loadBlock(bool value, uint b, uvec4 kvHead, uint j0, uint cols, uint span) {
    uint size = value ? c.valueHeadSize : c.headSize;
    [[dont_unroll]] for (uint x = gl_LocalInvocationIndex; x < KEY_BLOCK * span; x += ROWS * PARTS) {
        uint col = x / span, d = x % span;
        block[col * HEAD_SPAN + d] = col < cols && d < size ? keyOrValue(value, b, kvHead, j0 + col, d) : vec4(0.0);
    }
}

// The mask's value for query row i of head h of batch item b and key j: the
// axes of size 1 broadcast, the tensor's own rank-r index read as NCHW
// (trailing axes 1, as every slice image).
float maskAt(uint b, uint h, uint i, uint j) {
    uint index[4] = uint[4](c.maskB == 1u ? 0u : b, c.maskH == 1u ? 0u : h, c.maskS == 1u ? 0u : i, j);
    uint dims[4] = uint[4](c.maskB, c.maskH, c.maskS, c.maskT);
    uint first = 4u - c.maskRank;
    uint t[4] = uint[4](0u, 0u, 0u, 0u);
    // The image's N, C, H, W: the tensor's extents, trailing ones 1.
    uint extent[4] = uint[4](1u, 1u, 1u, 1u);
    [[unroll]] for (uint k = 0u; k < 4u; k++) {
        t[k] = k < c.maskRank ? index[min(first + k, 3u)] : 0u;
        extent[k] = k < c.maskRank ? dims[min(first + k, 3u)] : 1u;
    }
    uint slices = (extent[1] + 3u) / 4u;
    uint texel = ((t[0] * slices + t[1] / 4u) * extent[2] + t[2]) * extent[3] + t[3];
    return texelLane(texel, t[1] % 4u, 0u);
}

void main() {
    uint row = gl_LocalInvocationIndex % ROWS, part = gl_LocalInvocationIndex / ROWS;
    uint unit = gl_WorkGroupID.x * ROWS + row;
    uint b = gl_WorkGroupID.z;
    uvec4 lanes = uvec4(0u, 1u, 2u, 3u);
    // Each lane's query head and row; `live` lanes are inside Q.
    uvec4 head = packed() ? uvec4(gl_WorkGroupID.y) : gl_WorkGroupID.y * 4u + lanes;
    uvec4 qRow = packed() ? unit * 4u + lanes : uvec4(unit);
    bvec4 live = bvec4(uvec4(lessThan(head, uvec4(c.qHeads))) * uvec4(lessThan(qRow, uvec4(c.qLength))));
    uint group = c.qHeads / c.kvHeads;
    // The workgroup's lanes share their heads (a slice of 4 in 4-D Q, one in 3-D).
    uvec4 kvHead = min(head, uvec4(c.qHeads - 1u)) / group;
    uint total = c.pastLength + c.kvLength;
    // Elements of a block row to fill: the larger head, rounded up to whole parts.
    uint span = (max(c.headSize, c.valueHeadSize) + PARTS - 1u) / PARTS * PARTS;
    uint chunk = (c.headSize + PARTS - 1u) / PARTS, valueChunk = (c.valueHeadSize + PARTS - 1u) / PARTS;

    // The workgroup's rows, for the key range every lane shares.
    uint rowsPerGroup = packed() ? ROWS * 4u : ROWS;
    int firstRow = int(gl_WorkGroupID.x * rowsPerGroup);
    int endRow = min(firstRow + int(rowsPerGroup), int(c.qLength));
    uint valid = hasFlag(16u) ? uint(validKeys[b]) : total;
    // The count of valid keys before the first query row (ONNX's causal offset).
    int offset = hasFlag(8u) ? int(c.pastLength) : (hasFlag(16u) ? int(valid) - int(c.qLength) : 0);
    // Keys no row of the tile may attend are skipped.
    int start = 0;
    int end = int(min(total, valid));
    if (hasFlag(4u)) end = min(end, int(c.maskT));
    if (hasFlag(2u)) end = min(end, max(0, endRow + offset));
    if (c.windowRight >= 0) end = min(end, max(0, endRow + offset + c.windowRight));
    if (c.windowLeft >= 0) start = max(0, firstRow + offset - c.windowLeft);

    // This invocation's part of its queries, in registers (zero past the head).
    vec4 q[CHUNK];
    uint qSlices = packed() ? (c.qLength + 3u) / 4u : (c.qHeads + 3u) / 4u;
    bool anyLive = any(live);
    [[dont_unroll]] for (uint i = 0u; i < chunk; i++) {
        uint d = i * PARTS + part;
        uint at = min(d, c.headSize - 1u);
        vec4 texel = packed() ? imageLoad(queries, ivec3(0, head.x * c.headSize + at, b * qSlices + unit))
                              : imageLoad(queries, ivec3(at, unit, b * qSlices + gl_WorkGroupID.y));
        q[i] = anyLive && d < c.headSize ? texel : vec4(0.0);
    }
    vec4 acc[CHUNK];
    [[dont_unroll]] for (uint i = 0u; i < valueChunk; i++) acc[i] = vec4(0.0);
    vec4 runningMax = vec4(MASKED), runningSum = vec4(0.0);
    bvec4 allowed = bvec4(false);

    for (int j0 = start; j0 < end; j0 += int(KEY_BLOCK)) {
        uint cols = min(KEY_BLOCK, uint(end - j0));
        loadBlock(false, b, kvHead, uint(j0), cols, span);
        // The bias of the block's keys: part p takes keys p and p + 4 of its row's 4 lanes.
        [[dont_unroll]] for (uint n = 0u; n < KEY_BLOCK / PARTS * 4u; n++) {
            uint col = part + PARTS * (n / 4u), l = n % 4u;
            uint i = qRow[l];
            int j = j0 + int(col), position = int(i) + offset;
            bool ok = live[l] && col < cols && uint(j) < valid;
            if (hasFlag(2u) && j > position) ok = false;
            if (c.windowLeft >= 0 && position - j > c.windowLeft) ok = false;
            if (c.windowRight >= 0 && j - position > c.windowRight) ok = false;
            float value = 0.0;
            if (ok && hasFlag(4u)) {
                value = uint(j) < c.maskT ? maskAt(b, head[l], i, uint(j)) : MASKED;
                ok = value > MASKED;
            }
            bias[(row * KEY_BLOCK + col) * 4u + l] = ok ? value : MASKED;
        }
        barrier();
        vec4 dots[KEY_BLOCK];
        [[unroll]] for (uint col = 0u; col < KEY_BLOCK; col++) dots[col] = vec4(0.0);
        [[dont_unroll]] for (uint i = 0u; i < chunk; i++) {
            vec4 qi = q[i];
            [[unroll]] for (uint col = 0u; col < KEY_BLOCK; col++) dots[col] += qi * block[col * HEAD_SPAN + i * PARTS + part];
        }
        [[unroll]] for (uint col = 0u; col < KEY_BLOCK; col++) partial[(part * ROWS + row) * KEY_BLOCK + col] = dots[col];
        barrier();
        loadBlock(true, b, kvHead, uint(j0), cols, span);
        // Every part of a row sums the same partials in the same order, so they agree on the softmax.
        vec4 scores[KEY_BLOCK];
        vec4 blockMax = vec4(MASKED);
        [[unroll]] for (uint col = 0u; col < KEY_BLOCK; col++) {
            vec4 s = vec4(0.0);
            [[unroll]] for (uint p = 0u; p < PARTS; p++) s += partial[(p * ROWS + row) * KEY_BLOCK + col];
            s *= c.scale;
            if (c.softcap > 0.0) s = c.softcap * tanh(s / c.softcap);
            uint at = (row * KEY_BLOCK + col) * 4u;
            vec4 add = vec4(bias[at], bias[at + 1u], bias[at + 2u], bias[at + 3u]);
            bvec4 ok = greaterThan(add, vec4(MASKED));
            allowed = bvec4(uvec4(allowed) | uvec4(ok));
            scores[col] = mix(vec4(MASKED), s + add, ok);
            blockMax = max(blockMax, scores[col]);
        }
        barrier();
        // Rescale what the earlier blocks summed to the new maximum, then add this block's P V.
        vec4 newMax = max(runningMax, blockMax);
        vec4 correction = exp(runningMax - newMax);
        runningSum *= correction;
        vec4 weights[KEY_BLOCK];
        [[unroll]] for (uint col = 0u; col < KEY_BLOCK; col++) {
            // A masked key adds nothing, also while its row has no allowed key yet.
            weights[col] = mix(exp(scores[col] - newMax), vec4(0.0), lessThanEqual(scores[col], vec4(MASKED)));
            runningSum += weights[col];
        }
        [[dont_unroll]] for (uint i = 0u; i < valueChunk; i++) {
            vec4 a = acc[i] * correction;
            [[unroll]] for (uint col = 0u; col < KEY_BLOCK; col++) a += weights[col] * block[col * HEAD_SPAN + i * PARTS + part];
            acc[i] = a;
        }
        runningMax = newMax;
        barrier();
    }

    // A lane with no allowed key (or a zero sum) is zero as ONNX specifies, or NaN
    // (flag 32); padding lanes are never stored.
    bvec4 nonzero = bvec4(uvec4(allowed) * uvec4(greaterThan(runningSum, vec4(0.0))));
    vec4 empty = hasFlag(32u) ? vec4(uintBitsToFloat(0x7fc00000u)) : vec4(0.0);
    vec4 inverse = 1.0 / max(runningSum, vec4(1e-30));
    uint ySlices = packed() ? (c.qLength + 3u) / 4u : (c.qHeads + 3u) / 4u;
    if (unit >= (packed() ? ySlices : c.qLength)) return;
    [[dont_unroll]] for (uint i = 0u; i < valueChunk; i++) {
        uint e = i * PARTS + part;
        if (e < c.valueHeadSize) {
            vec4 y = mix(empty, lk_round_half(acc[i] * inverse), nonzero);
            if (packed()) imageStore(destination, ivec3(0, head.x * c.valueHeadSize + e, b * ySlices + unit), y);
            else imageStore(destination, ivec3(e, unit, b * ySlices + gl_WorkGroupID.y), y);
        }
    }
}
