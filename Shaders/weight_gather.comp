#version 450
// A layer's GPU weight form re-derived on the device from the optimizer's
// Float32 parameter buffer after a training step, so the layer is not
// uploaded again: destination[i] = source[offset + map[i]], or 0 where
// map[i] is negative (the form's padding). The form is a rearranged,
// zero-padded copy of one parameter (a convolution's mat4 blocks, its bias
// as vec4s); `map` is that arrangement applied once on the host to the
// parameter's element indices (Training/DeviceWeights.swift), so the copy
// holds the same bits an upload of the arranged values would.
//
// Invocation (x, y) writes element y * rowLength + x of `count`.
#extension GL_GOOGLE_include_directive : require
#include "layerkit.glsl"

LK_WORKGROUP_SIZE;
layout(std430, binding = 0) readonly buffer Source { float source[]; };
layout(std430, binding = 1) readonly buffer Map { int map[]; };
layout(std430, binding = 2) writeonly buffer Destination { float destination[]; };
layout(push_constant) uniform Constants { uint offset; uint count; uint rowLength; } c;

void main() {
    uint index = gl_GlobalInvocationID.y * c.rowLength + gl_GlobalInvocationID.x;
    if (gl_GlobalInvocationID.x >= c.rowLength || index >= c.count) return;
    int k = map[index];
    destination[index] = k < 0 ? 0.0 : source[c.offset + uint(k)];
}
