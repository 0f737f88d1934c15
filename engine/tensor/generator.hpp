#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace ckpt {

// The generator behind dropout and random init: a Mersenne Twister (mt19937) whose state is
// laid out like PyTorch's CPU generator state, so a stashed state is the same 5,056 bytes that
// torch.utils.checkpoint stashes per checkpoint. Streams are not bit-compatible with PyTorch's
// kernels (the oracle runs dropout with p = 0 or copies masks across).
class Generator {
 public:
  explicit Generator(std::uint64_t seed = 67280421310721ULL);

  void manual_seed(std::uint64_t seed);
  std::uint64_t initial_seed() const { return state_.legacy.the_initial_seed; }
  std::uint32_t next_u32();
  std::uint64_t next_u64();
  double uniform();  // [0, 1)
  double normal();   // standard normal (Box-Muller)

  // Serialized state: exactly state_bytes() bytes.
  std::vector<std::uint8_t> get_state() const;
  void set_state(const std::vector<std::uint8_t>& bytes);
  static constexpr std::size_t state_bytes() { return sizeof(State); }

  // The generator ops use on this thread unless given one (a GeneratorScope sets it).
  static Generator& current();

 private:
  struct LegacyState {
    std::uint64_t the_initial_seed;
    int left;
    int seeded;
    std::uint64_t next;
    std::uint64_t state[624];
    double normal_x;
    double normal_y;
    double normal_rho;
    int normal_is_valid;
  };
  struct State {
    LegacyState legacy;
    float next_float_normal_sample;
    bool is_next_float_normal_sample_valid;
  };
  void twist();
  State state_{};
};

class GeneratorScope {
 public:
  explicit GeneratorScope(Generator& g);
  ~GeneratorScope();
  GeneratorScope(const GeneratorScope&) = delete;
  GeneratorScope& operator=(const GeneratorScope&) = delete;

 private:
  Generator* previous_;
};

}  // namespace ckpt
