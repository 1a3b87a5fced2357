#version 450
// ONNX Where(condition, X, Y) with multidirectional broadcasting: X where
// the condition is non-zero (NaN included), else Y, bit for bit.
//
// One invocation per output texel; each operand is read at its broadcast
// texel (broadcast.glsl), a one-channel operand's lane 0 feeding all lanes.
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"
#include "broadcast.glsl"

LK_WORKGROUP_SIZE;
layout(rgba16f, binding = 0) readonly uniform image2DArray condition;
layout(rgba16f, binding = 1) readonly uniform image2DArray xs;
layout(rgba16f, binding = 2) readonly uniform image2DArray ys;
layout(rgba16f, binding = 3) writeonly uniform image2DArray destination;
layout(push_constant) uniform Shape {
    LK_SHAPE_FIELDS;  // of the output
    uint cWidth; uint cHeight; uint cChannels; uint cBatch;
    uint xWidth; uint xHeight; uint xChannels; uint xBatch;
    uint yWidth; uint yHeight; uint yChannels; uint yBatch;
} shape;

void main() {
    uvec3 id = gl_GlobalInvocationID;
    if (id.x >= shape.width || id.y >= shape.height || id.z >= shape.layers) return;
    uint n = id.z / shape.slices;
    uint s = id.z % shape.slices;
    uvec4 ce = uvec4(shape.cWidth, shape.cHeight, shape.cChannels, shape.cBatch);
    uvec4 xe = uvec4(shape.xWidth, shape.xHeight, shape.xChannels, shape.xBatch);
    uvec4 ye = uvec4(shape.yWidth, shape.yHeight, shape.yChannels, shape.yBatch);
    vec4 c = imageLoad(condition, lk_operand_texel(ce, id, n, s));
    vec4 a = imageLoad(xs, lk_operand_texel(xe, id, n, s));
    vec4 b = imageLoad(ys, lk_operand_texel(ye, id, n, s));
    if (shape.cChannels == 1u) c = c.xxxx;
    if (shape.xChannels == 1u) a = a.xxxx;
    if (shape.yChannels == 1u) b = b.xxxx;
    vec4 y = mix(b, a, notEqual(c, vec4(0.0)));
    // Padding lanes stay zero. The picked values are fp16 already: stored as read.
    y = mix(vec4(0.0), y, lk_channel_lanes(s, shape.channels));
    imageStore(destination, ivec3(id), y);
}
