#version 450
// --measure's shader copy (probe/worker/shader_copy.h): dst = src, 16 bytes a
// load and a store, every invocation striding over the whole buffer so one
// dispatch of at most 65535 groups covers any size.
layout(local_size_x = 256) in;

layout(set = 0, binding = 0, std430) readonly buffer Src { uvec4 words[]; } src;
layout(set = 0, binding = 1, std430) writeonly buffer Dst { uvec4 words[]; } dst;
layout(push_constant) uniform Count { uint words; } count;

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < count.words; i += stride) dst.words[i] = src.words[i];
}
