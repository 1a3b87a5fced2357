#version 450
// Concatenation along the channel axis: one group of up to three inputs
// (with the output, the four bindings a dispatch may have).
//
// One invocation per output texel in slices [firstSlice, firstSlice +
// sliceCount) of each batch item. Lane c takes channel c - offsets[k] of
// the input k whose range [offsets[k], offsets[k] + counts[k]) holds it
// (unused slots have count 0). Lanes no input of this group owns keep the
// texel's current value when flag bit 0 is set (another group's dispatch,
// ordered before or after this one, writes them); padding lanes are zeroed
// when bit 1 is set (the last group).
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray input0;
layout(rgba16f, binding = 1) readonly uniform image2DArray input1;
layout(rgba16f, binding = 2) readonly uniform image2DArray input2;
layout(rgba16f, binding = 3) uniform image2DArray destination;
layout(push_constant) uniform Shape {
    LK_SHAPE_FIELDS;  // of the output
    uint firstSlice; uint sliceCount; uint flags;
    uvec4 offsets; uvec4 counts;  // lanes 0-2 used
} shape;

// Channel c of item n of input k, at (x, y).
float lk_input_lane(uint k, uint c, ivec2 xy, uint n) {
    ivec3 p = ivec3(xy, n * ((shape.counts[k] + 3u) / 4u) + c / 4u);
    vec4 v;
    if (k == 0u) v = imageLoad(input0, p);
    else if (k == 1u) v = imageLoad(input1, p);
    else v = imageLoad(input2, p);
    return v[c % 4u];
}

void main() {
    uvec3 id = gl_GlobalInvocationID;
    if (id.x >= shape.width || id.y >= shape.height || id.z >= shape.sliceCount * (shape.layers / shape.slices)) return;
    uint n = id.z / shape.sliceCount;
    uint s = shape.firstSlice + id.z % shape.sliceCount;
    ivec3 texel = ivec3(id.xy, n * shape.slices + s);
    vec4 result = (shape.flags & 1u) != 0u ? imageLoad(destination, texel) : vec4(0.0);
    for (uint lane = 0u; lane < 4u; lane++) {
        uint c = s * 4u + lane;
        if (c >= shape.channels) {
            if ((shape.flags & 2u) != 0u) result[lane] = 0.0;
            continue;
        }
        for (uint k = 0u; k < 3u; k++) {
            if (c >= shape.offsets[k] && c - shape.offsets[k] < shape.counts[k]) {
                result[lane] = lk_input_lane(k, c - shape.offsets[k], ivec2(id.xy), n);
            }
        }
    }
    // Lanes hold fp16 values as loaded: they store exactly.
    imageStore(destination, texel, result);
}
