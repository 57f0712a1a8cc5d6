#version 450
// The whole-allocation sweep's word moves in one dispatch (probe/worker/sweep_shader.h):
// gather copies the 8-byte word at every stamp's offset of the shared buffer into a
// private one, scatter the other way, where one VkBufferCopy region per stamp made
// the copy command cost about a microsecond a stamp on NVIDIA 580.
layout(local_size_x = 256) in;

layout(set = 0, binding = 0, std430) buffer Shared { uvec2 words[]; } shared_words;
layout(set = 0, binding = 1, std430) buffer Private { uvec2 words[]; } private_words;
// Index of each stamp's word in Shared (its byte offset / 8).
layout(set = 0, binding = 2, std430) readonly buffer Index { uint at[]; } index;
layout(push_constant) uniform Params { uint count; uint scatter; } params;

void main() {
  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < params.count; i += stride) {
    if (params.scatter != 0u)
      shared_words.words[index.at[i]] = private_words.words[i];
    else
      private_words.words[i] = shared_words.words[index.at[i]];
  }
}
