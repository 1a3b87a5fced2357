#version 450
// ONNX Conv (2-D) on slice images. Sums in fp32 from the bias, applies the
// fused epilogue if any (epilogue.glsl), stores rounded to nearest fp16
// through `store_output` (the one store; padding lanes stay zero).
//
// One of three forms is defined (Convolution+GPU.swift arranges the weights
// for it and picks the block):
//   LK_CONV_DENSE      group 1. Each invocation computes a block of
//                      LK_OUT_BLOCK output slices x LK_X_BLOCK texels along x
//                      (one row, one batch item): each input texel it loads
//                      meets LK_OUT_BLOCK weight matrices, each weight matrix
//                      LK_X_BLOCK texels. weights[((ob * taps + tap) * inSlices
//                      + is) * LK_OUT_BLOCK + j] is the mat4 of output slice
//                      ob * LK_OUT_BLOCK + j, with w[4os + o][4is + i] at column
//                      i, row o (zero past M or C), so one block's weights are
//                      contiguous in the order it reads them. Padding lanes of
//                      the input are zero, so C % 4 != 0 needs nothing special.
//   LK_CONV_DEPTHWISE  group = C = M: weights[os * taps + tap] is a vec4,
//                      multiplied lane by lane with input slice os; LK_X_BLOCK
//                      texels an invocation share each weight load.
//   LK_CONV_GROUPED    any other group: ONNX's [M, C/group, kH, kW] floats;
//                      each output lane sums its own group's input channels.
// LK_WEIGHTS_F16 (dense only): the weights are fp16, two per uint
// (unpackHalf2x16), half the bytes read; the sums stay fp32.
// LK_SHARED_WEIGHTS (dense only): one workgroup computes 64 blocks of the
// same output-slice block and batch item, so all its invocations read the
// same weights: per chunk of LK_SHARED_K (tap, input slice) steps the
// workgroup copies the chunk's LK_SHARED_K * LK_OUT_BLOCK matrices (one
// contiguous run of the arranged weights) into `shared` storage once,
// barrier()s, and every invocation reads them from there; LK_SHARED_K *
// LK_OUT_BLOCK * 64 bytes of shared storage (Convolution+GPU.swift checks
// it against maxComputeSharedMemorySize).
// (None defined: the dense form, so offline compilers can check the file.)
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"

#if !defined(LK_CONV_DEPTHWISE) && !defined(LK_CONV_GROUPED)
#define LK_CONV_DENSE 1
#endif
#ifndef LK_OUT_BLOCK
#define LK_OUT_BLOCK 1
#endif
#ifndef LK_X_BLOCK
#define LK_X_BLOCK 1
#endif

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray source;
layout(rgba16f, binding = 1) writeonly uniform image2DArray destination;
#if defined(LK_CONV_DENSE) && defined(LK_WEIGHTS_F16)
// A mat4 is two uvec4s: columns 0-1, then 2-3, each column two packed pairs.
layout(std430, binding = 2) readonly buffer Weights { uvec4 weights[]; };
mat4 weight(uint i) {
    uvec4 a = weights[2u * i], b = weights[2u * i + 1u];
    return mat4(vec4(unpackHalf2x16(a.x), unpackHalf2x16(a.y)), vec4(unpackHalf2x16(a.z), unpackHalf2x16(a.w)),
                vec4(unpackHalf2x16(b.x), unpackHalf2x16(b.y)), vec4(unpackHalf2x16(b.z), unpackHalf2x16(b.w)));
}
#elif defined(LK_CONV_DENSE)
layout(std430, binding = 2) readonly buffer Weights { mat4 weights[]; };
mat4 weight(uint i) { return weights[i]; }
#elif defined(LK_CONV_DEPTHWISE)
layout(std430, binding = 2) readonly buffer Weights { vec4 weights[]; };
#else
layout(std430, binding = 2) readonly buffer Weights { float weights[]; };
#endif
#if defined(LK_SHARED_WEIGHTS)
#if !defined(LK_CONV_DENSE)
#error "LK_SHARED_WEIGHTS needs the dense form"
#endif
#ifndef LK_SHARED_K
#define LK_SHARED_K 32
#endif
shared mat4 tile[LK_SHARED_K * LK_OUT_BLOCK];
#endif
layout(std430, binding = 3) readonly buffer Bias { vec4 bias[]; };
layout(push_constant) uniform Geometry {
    LK_SHAPE_FIELDS;  // the output's
    uint inWidth; uint inHeight; uint inChannels; uint inSlices;
    uint kernelWidth; uint kernelHeight;
    uint strideX; uint strideY; uint dilationX; uint dilationY;
    int padLeft; int padTop;
    uint groupInChannels; uint groupOutChannels;
} p;

// The fused epilogue, when LayerKit defines one (Shaders/epilogue.glsl).
#include "epilogue.glsl"

// The one store of an output texel: the fused epilogue (if any) on the
// fp32 sums, zero padding lanes, round to fp16.
void store_output(ivec3 texel, uint slice, vec4 value) {
    value = lk_epilogue(value, slice, texel);
    value = mix(vec4(0.0), value, lk_channel_lanes(slice, p.channels));
    imageStore(destination, texel, lk_round_half(value));
}

void main() {
    // One invocation a block: the blocks counted along the row first, then
    // down the rows, then over (batch item, block of LK_OUT_BLOCK output
    // slices), 64 to a workgroup; the workgroups (an 8x8 size) laid out as
    // (x, z) = (i % gl_NumWorkGroups.x, i / gl_NumWorkGroups.x). A flat
    // count keeps whole SIMD rows busy where a 2-D one would not: on a 7x7
    // map, 2 blocks of 4 texels a row used 2 of each row's 8 invocations.
    uint blocks = (p.slices + uint(LK_OUT_BLOCK) - 1u) / uint(LK_OUT_BLOCK);
    uint items = p.layers / p.slices;
    uint rowBlocks = (p.width + uint(LK_X_BLOCK) - 1u) / uint(LK_X_BLOCK);
#if defined(LK_SHARED_WEIGHTS)
    // A workgroup is 64 blocks of one (batch item, output-slice block): the
    // blocks of a map counted flat, in groups of 64; the last group's spare
    // invocations still copy weights and meet every barrier.
    uint spatialGroups = (rowBlocks * p.height + 63u) / 64u;
    uint group = gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.z;
    uint index = (group % spatialGroups) * 64u + gl_LocalInvocationIndex;
    uint row = index / rowBlocks;
    uvec3 id = uvec3(index % rowBlocks, row, group / spatialGroups);
    bool live = row < p.height;
    // The same for the whole workgroup: no barrier is left half-met.
    if (id.z >= items * blocks) return;
#else
    uint index = gl_LocalInvocationIndex
        + 64u * (gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.z);
    uint row = index / rowBlocks;
    uvec3 id = uvec3(index % rowBlocks, row % p.height, row / p.height);
    if (id.z >= items * blocks) return;
#endif
    uint x0 = id.x * uint(LK_X_BLOCK);
    uint item = id.z / blocks, ob = id.z % blocks;
    uint os0 = ob * uint(LK_OUT_BLOCK);
    uint inLayer0 = item * p.inSlices;
    int y0 = int(id.y * p.strideY) - p.padTop;
    uint taps = p.kernelWidth * p.kernelHeight;

    vec4 acc[LK_OUT_BLOCK][LK_X_BLOCK];
    for (uint j = 0u; j < uint(LK_OUT_BLOCK); j++) {
        // The bias buffer is padded to whole blocks.
        for (uint b = 0u; b < uint(LK_X_BLOCK); b++) acc[j][b] = bias[os0 + j];
    }
#if defined(LK_SHARED_WEIGHTS)
    // Steps k = tap * inSlices + is, as the weights are arranged; the loop
    // bounds are the workgroup's, so every invocation meets each barrier.
    uint depth = taps * p.inSlices;
    uint first = ob * depth * uint(LK_OUT_BLOCK);
    for (uint k0 = 0u; k0 < depth; k0 += uint(LK_SHARED_K)) {
        uint n = min(uint(LK_SHARED_K), depth - k0);
        for (uint i = gl_LocalInvocationIndex; i < n * uint(LK_OUT_BLOCK); i += 64u) {
            tile[i] = weight(first + k0 * uint(LK_OUT_BLOCK) + i);
        }
        barrier();
        if (live) {
            for (uint k = 0u; k < n; k++) {
                uint tap = (k0 + k) / p.inSlices, is = (k0 + k) % p.inSlices;
                uint ky = tap / p.kernelWidth, kx = tap % p.kernelWidth;
                int iy = y0 + int(ky * p.dilationY);
                if (iy < 0 || iy >= int(p.inHeight)) continue;
                vec4 t[LK_X_BLOCK];
                for (uint b = 0u; b < uint(LK_X_BLOCK); b++) {
                    int ix = int((x0 + b) * p.strideX + kx * p.dilationX) - p.padLeft;
                    t[b] = ix >= 0 && ix < int(p.inWidth) ? imageLoad(source, ivec3(ix, iy, inLayer0 + is)) : vec4(0.0);
                }
                for (uint j = 0u; j < uint(LK_OUT_BLOCK); j++) {
                    mat4 w = tile[k * uint(LK_OUT_BLOCK) + j];
                    for (uint b = 0u; b < uint(LK_X_BLOCK); b++) acc[j][b] += w * t[b];
                }
            }
        }
        // Every read of this chunk done before the next overwrites it.
        barrier();
    }
    if (!live) return;
#else
    for (uint ky = 0u; ky < p.kernelHeight; ky++) {
        int iy = y0 + int(ky * p.dilationY);
        if (iy < 0 || iy >= int(p.inHeight)) continue;
        for (uint kx = 0u; kx < p.kernelWidth; kx++) {
            int ix[LK_X_BLOCK];
            bool inside[LK_X_BLOCK];
            for (uint b = 0u; b < uint(LK_X_BLOCK); b++) {
                ix[b] = int((x0 + b) * p.strideX + kx * p.dilationX) - p.padLeft;
                inside[b] = ix[b] >= 0 && ix[b] < int(p.inWidth);
            }
            uint tap = ky * p.kernelWidth + kx;
#if defined(LK_CONV_DENSE)
            uint base = (ob * taps + tap) * p.inSlices * uint(LK_OUT_BLOCK);
            for (uint is = 0u; is < p.inSlices; is++) {
                vec4 t[LK_X_BLOCK];
                for (uint b = 0u; b < uint(LK_X_BLOCK); b++) {
                    t[b] = inside[b] ? imageLoad(source, ivec3(ix[b], iy, inLayer0 + is)) : vec4(0.0);
                }
                for (uint j = 0u; j < uint(LK_OUT_BLOCK); j++) {
                    mat4 w = weight(base + is * uint(LK_OUT_BLOCK) + j);
                    for (uint b = 0u; b < uint(LK_X_BLOCK); b++) acc[j][b] += w * t[b];
                }
            }
#elif defined(LK_CONV_DEPTHWISE)
            vec4 w = weights[os0 * taps + tap];
            for (uint b = 0u; b < uint(LK_X_BLOCK); b++) {
                if (inside[b]) acc[0][b] += w * imageLoad(source, ivec3(ix[b], iy, inLayer0 + os0));
            }
#else
            if (!inside[0]) continue;
            for (uint lane = 0u; lane < 4u; lane++) {
                uint oc = os0 * 4u + lane;
                if (oc >= p.channels) break;
                uint firstIn = (oc / p.groupOutChannels) * p.groupInChannels;
                for (uint i = 0u; i < p.groupInChannels; i++) {
                    uint ic = firstIn + i;
                    float x = imageLoad(source, ivec3(ix[0], iy, inLayer0 + ic / 4u))[ic % 4u];
                    acc[0][0][lane] += weights[(oc * p.groupInChannels + i) * taps + tap] * x;
                }
            }
#endif
        }
    }
#endif
    for (uint j = 0u; j < uint(LK_OUT_BLOCK); j++) {
        uint os = os0 + j;
        if (os >= p.slices) break;
        for (uint b = 0u; b < uint(LK_X_BLOCK); b++) {
            if (x0 + b >= p.width) break;
            store_output(ivec3(x0 + b, id.y, item * p.slices + os), os, acc[j][b]);
        }
    }
}
