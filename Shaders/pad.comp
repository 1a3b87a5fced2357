#version 450
// Pad of every axis of an NCHW slice image.
//
// One invocation per output texel. Along each axis the input keeps
// [kept, kept + keptLength) (negative pads crop), placed at `start` in the
// output; an index outside it reads the constant (mode 0) or the kept
// element that reflect (1), edge (2) or wrap (3) maps it to. The channel
// axis is mapped lane by lane (a pad of 1 channel moves every channel to
// the next lane), and only when it is padded: otherwise a texel is copied.
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray source;
layout(rgba16f, binding = 1) writeonly uniform image2DArray destination;
layout(push_constant) uniform Shape {
    LK_SHAPE_FIELDS;  // of the output
    int inWidth; int inHeight;
    int keptX; int keptY; int keptWidth; int keptHeight;
    int startX; int startY;
    uint mode; float value;
    int keptC; int keptChannels; int startC; uint inSlices;
    int keptN; int keptBatch; int startN;
} shape;

// a mod m in [0, m) for m > 0. GLSL leaves % undefined for a negative
// operand (NVIDIA's and lavapipe's differ), so it only sees non-negative ones.
int lk_floor_mod(int a, int m) { return a >= 0 ? a % m : m - 1 - (-1 - a) % m; }

// The kept index output index o maps to, or -1 for the constant.
int lk_pad_source(int o, int start, int kept, int length) {
    int p = o - start;
    if (p >= 0 && p < length) return kept + p;
    if (shape.mode == 0u || length <= 0) return -1;
    if (shape.mode == 2u) {
        p = clamp(p, 0, length - 1);
    } else if (shape.mode == 1u) {
        if (length == 1) {
            p = 0;
        } else {
            int period = 2 * (length - 1);
            p = lk_floor_mod(p, period);
            if (p >= length) p = period - p;
        }
    } else {
        p = lk_floor_mod(p, length);
    }
    return kept + p;
}

void main() {
    uvec3 id = gl_GlobalInvocationID;
    if (id.x >= shape.width || id.y >= shape.height || id.z >= shape.layers) return;
    uint slice = lk_slice_of(id.z, shape.slices);
    int x = lk_pad_source(int(id.x), shape.startX, shape.keptX, shape.keptWidth);
    int y = lk_pad_source(int(id.y), shape.startY, shape.keptY, shape.keptHeight);
    int n = lk_pad_source(int(lk_item_of(id.z, shape.slices)), shape.startN, shape.keptN, shape.keptBatch);
    bvec4 lanes = lk_channel_lanes(slice, shape.channels);
    vec4 fill = mix(vec4(0.0), vec4(lk_round_half(shape.value)), lanes);
    vec4 result = fill;
    if (x >= 0 && y >= 0 && n >= 0) {
        uint layer = uint(n) * shape.inSlices;
        if (shape.startC == 0 && shape.keptC == 0 && shape.keptChannels == int(shape.channels)) {
            // Channels unpadded: loaded fp16 values store exactly; padding lanes are zero already.
            result = imageLoad(source, ivec3(x, y, layer + slice));
        } else {
            for (int lane = 0; lane < 4; lane++) {
                if (!lanes[lane]) continue;
                int c = lk_pad_source(int(slice) * 4 + lane, shape.startC, shape.keptC, shape.keptChannels);
                if (c >= 0) result[lane] = imageLoad(source, ivec3(x, y, layer + uint(c / 4)))[c % 4];
            }
        }
    }
    imageStore(destination, ivec3(id), result);
}
