#version 450
// A window of the input, axis by axis (ElementWindow): output element
// (n, c, h, w) reads the input element whose index along each axis is
// (start + o * step) wrapped into the axis's extent. Slice and Split use it
// as a strided window (start, step in range: no wrap), Tile and Expand as a
// repetition (start 0, step 1: an index past the extent wraps, a broadcast
// extent of 1 always reads index 0).
//
// One invocation per output texel. The window's input extents may differ
// from the input image's shape (Expand aligns a lower-rank input to the
// output's rank): the row-major index of the window's input element is read
// back in the image's own W, H, C, as reshape.comp does.
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray source;
layout(rgba16f, binding = 1) writeonly uniform image2DArray destination;
layout(push_constant) uniform Shape {
    LK_SHAPE_FIELDS;  // of the output
    uint inWidth; uint inHeight; uint inChannels;  // of the input image
    ivec4 start; ivec4 step; ivec4 extent;  // per axis (n, c, h, w) of the window's input
} shape;

// An index >= 0 wrapped into [0, e).
int lk_wrap(int i, int e) { return i >= e ? i % e : i; }

void main() {
    uvec3 id = gl_GlobalInvocationID;
    if (id.x >= shape.width || id.y >= shape.height || id.z >= shape.layers) return;
    uint n = id.z / shape.slices;
    uint s = id.z % shape.slices;
    uint inSlices = (shape.inChannels + 3u) / 4u;
    ivec4 e = shape.extent;
    vec4 result = vec4(0.0);
    for (uint lane = 0u; lane < 4u; lane++) {
        uint c = s * 4u + lane;
        if (c >= shape.channels) break;
        ivec4 i = shape.start + ivec4(int(n), int(c), int(id.y), int(id.x)) * shape.step;
        i = ivec4(lk_wrap(i.x, e.x), lk_wrap(i.y, e.y), lk_wrap(i.z, e.z), lk_wrap(i.w, e.w));
        uint index = ((uint(i.x) * uint(e.y) + uint(i.y)) * uint(e.z) + uint(i.z)) * uint(e.w) + uint(i.w);
        uint x = index % shape.inWidth;
        index /= shape.inWidth;
        uint y = index % shape.inHeight;
        index /= shape.inHeight;
        uint inC = index % shape.inChannels;
        uint inN = index / shape.inChannels;
        result[lane] = imageLoad(source, ivec3(x, y, inN * inSlices + inC / 4u))[inC % 4u];
    }
    // Lanes hold fp16 values as loaded: they store exactly.
    imageStore(destination, ivec3(id), result);
}
