#include "engine/tensor/generator.hpp"

#include <cmath>
#include <cstring>
#include <numbers>
#include <stdexcept>
#include <string>

namespace ckpt {

static_assert(Generator::state_bytes() == 5056,
              "the generator state must match PyTorch's 5,056-byte CPU generator state");

namespace {
constexpr int kN = 624;
constexpr int kM = 397;
thread_local Generator* t_current = nullptr;
}  // namespace

Generator::Generator(std::uint64_t seed) {
  manual_seed(seed);
}

void Generator::manual_seed(std::uint64_t seed) {
  state_ = State{};
  auto& s = state_.legacy;
  s.the_initial_seed = seed;
  s.state[0] = seed & 0xffffffffULL;
  for (int j = 1; j < kN; ++j) {
    s.state[j] = (1812433253ULL * (s.state[j - 1] ^ (s.state[j - 1] >> 30)) + j) & 0xffffffffULL;
  }
  s.left = 1;
  s.next = 0;
  s.seeded = 1;
}

void Generator::twist() {
  auto& s = state_.legacy;
  auto mix = [](std::uint64_t u, std::uint64_t v) {
    const std::uint64_t y = (u & 0x80000000ULL) | (v & 0x7fffffffULL);
    return (y >> 1) ^ ((v & 1ULL) ? 0x9908b0dfULL : 0ULL);
  };
  for (int i = 0; i < kN - kM; ++i) s.state[i] = s.state[i + kM] ^ mix(s.state[i], s.state[i + 1]);
  for (int i = kN - kM; i < kN - 1; ++i)
    s.state[i] = s.state[i + kM - kN] ^ mix(s.state[i], s.state[i + 1]);
  s.state[kN - 1] = s.state[kM - 1] ^ mix(s.state[kN - 1], s.state[0]);
  s.left = kN;
  s.next = 0;
}

std::uint32_t Generator::next_u32() {
  auto& s = state_.legacy;
  if (--s.left <= 0) twist();
  std::uint64_t y = s.state[s.next++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680ULL;
  y ^= (y << 15) & 0xefc60000ULL;
  y ^= (y >> 18);
  return static_cast<std::uint32_t>(y & 0xffffffffULL);
}

std::uint64_t Generator::next_u64() {
  const std::uint64_t hi = next_u32();
  return (hi << 32) | next_u32();
}

double Generator::uniform() {
  // 53 random bits, as in PyTorch's uniform_real_distribution<double>.
  return static_cast<double>(next_u64() & ((1ULL << 53) - 1)) * (1.0 / 9007199254740992.0);
}

double Generator::normal() {
  auto& s = state_.legacy;
  if (s.normal_is_valid) {
    s.normal_is_valid = 0;
    return s.normal_y;
  }
  double u1 = uniform();
  const double u2 = uniform();
  if (u1 < 1e-300) u1 = 1e-300;
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 2.0 * std::numbers::pi * u2;
  s.normal_x = r * std::cos(theta);
  s.normal_y = r * std::sin(theta);
  s.normal_rho = r;
  s.normal_is_valid = 1;
  return s.normal_x;
}

std::vector<std::uint8_t> Generator::get_state() const {
  std::vector<std::uint8_t> out(sizeof(State));
  std::memcpy(out.data(), &state_, sizeof(State));
  return out;
}

void Generator::set_state(const std::vector<std::uint8_t>& bytes) {
  if (bytes.size() != sizeof(State))
    throw std::invalid_argument("generator state must be " + std::to_string(sizeof(State)) +
                                " bytes, got " + std::to_string(bytes.size()));
  std::memcpy(&state_, bytes.data(), sizeof(State));
}

Generator& Generator::current() {
  thread_local Generator fallback;
  return t_current ? *t_current : fallback;
}

GeneratorScope::GeneratorScope(Generator& g) : previous_(t_current) {
  t_current = &g;
}
GeneratorScope::~GeneratorScope() {
  t_current = previous_;
}

}  // namespace ckpt
