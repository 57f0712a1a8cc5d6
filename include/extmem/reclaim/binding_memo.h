// A memo from (store handle, range, destroy epoch) to a binding object such as
// a descriptor set (docs/reclaim.md, "Destroy epoch").
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <utility>

namespace extmem::reclaim {

/// What a memo entry is keyed on.
enum class MemoKeying {
  /// handle, offset, range and the list's destroy epoch: an entry can never
  /// outlive a destruction, so a reused handle value cannot hit it.
  handle_range_epoch,
  /// handle, offset and range only. Wrong once stores die mid-frame (a new
  /// store can get a dead store's handle value); kept as the negative control.
  handle_range_only,
};

/// The key: `handle` is the store's handle value (VkBuffer or a stand-in),
/// `offset` and `range` in bytes within it, `epoch` the destroy epoch at lookup.
struct MemoKey {
  std::uint64_t handle = 0;
  std::uint64_t offset = 0;
  std::uint64_t range = 0;
  std::uint64_t epoch = 0;
  bool operator==(const MemoKey&) const = default;
};

struct MemoKeyHash {
  std::size_t operator()(const MemoKey& k) const noexcept {
    std::uint64_t h = k.handle * 0x9e3779b97f4a7c15ull;
    h ^= (k.offset + 0x632be59bd9b4e019ull) + (h << 6) + (h >> 2);
    h ^= (k.range + 0x85ebca77c2b2ae63ull) + (h << 6) + (h >> 2);
    h ^= (k.epoch + 0xc2b2ae3d27d4eb4full) + (h << 6) + (h >> 2);
    return static_cast<std::size_t>(h);
  }
};

/// Maps a binding key to a value the caller owns (a VkDescriptorSet). The memo
/// never frees values itself; it hands retired ones to the caller's `retire`
/// function, which must keep them until the GPU has finished with them.
template <typename Value>
class BindingMemo {
 public:
  explicit BindingMemo(MemoKeying keying) : keying_(keying) {}

  MemoKeying keying() const noexcept { return keying_; }

  /// The value for (handle, offset, range) under destroy epoch `epoch`, if memoised.
  /// With handle_range_epoch, a newer epoch than the memo has seen first retires
  /// every entry (none of them can be hit again).
  std::optional<Value> find(std::uint64_t handle, std::uint64_t offset, std::uint64_t range, std::uint64_t epoch,
                            const std::function<void(Value)>& retire) {
    if (keying_ == MemoKeying::handle_range_epoch && epoch != epoch_) {
      retire_all(retire);
      epoch_ = epoch;
    }
    auto it = map_.find(key(handle, offset, range));
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }

  /// Records `value` for the key; a value already there is retired.
  void insert(std::uint64_t handle, std::uint64_t offset, std::uint64_t range, Value value,
              const std::function<void(Value)>& retire) {
    auto [it, inserted] = map_.try_emplace(key(handle, offset, range), value);
    if (!inserted) {
      retire(std::exchange(it->second, value));
    }
  }

  /// Hands every value to `retire` and empties the memo.
  void retire_all(const std::function<void(Value)>& retire) {
    for (auto& [k, v] : map_) retire(v);
    map_.clear();
  }

  std::size_t size() const noexcept { return map_.size(); }

 private:
  MemoKey key(std::uint64_t handle, std::uint64_t offset, std::uint64_t range) const {
    return MemoKey{handle, offset, range, keying_ == MemoKeying::handle_range_epoch ? epoch_ : 0};
  }

  MemoKeying keying_;
  std::uint64_t epoch_ = 0;
  std::unordered_map<MemoKey, Value, MemoKeyHash> map_;
};

}  // namespace extmem::reclaim
