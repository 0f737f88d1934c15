#include "engine/plan/fsdp_code.hpp"

#include <sstream>

#include "engine/plan/python_expr.hpp"
#include "engine/report/fsdp_memory.hpp"

namespace ckpt {

namespace {

const char* torch_dtype(DType t) {
  return t == DType::bf16 ? "torch.bfloat16" : t == DType::f16 ? "torch.float16" : "torch.float32";
}

}  // namespace

bool fsdp_requested(const RunSettings& s) {
  return s.fsdp.ranks > 0 || s.param_dtype != DType::f32;
}

std::string fsdp_function(const Model& model, const RunSettings& s) {
  const auto units = fsdp_units(model, std::max(1, s.fsdp.ranks));
  std::ostringstream o;
  o << "# FSDP2 as Checkpoint Lab modelled it (" << kFsdpNotMeasured << "):\n"
    << "# fully_shard on every block, then the root, as torchtitan's apply_fsdp does, after the\n"
    << "# checkpoints. Run under torchrun with " << std::max(1, s.fsdp.ranks)
    << " processes (one GPU each).\n"
    << "BLOCKS = [";
  for (std::size_t i = 0; i + 1 < units.size(); ++i)
    o << (i ? ", " : "") << py::quote(units[i].path);
  o << "]\n\n\n"
    << "def apply_fsdp(model, mesh=None):\n"
    << "    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard  # PyTorch 2.6+\n"
    << "    mp_policy = MixedPrecisionPolicy(param_dtype=" << torch_dtype(s.param_dtype)
    << ", reduce_dtype=" << torch_dtype(s.fsdp.reduce_dtype) << ")\n"
    << "    for name in BLOCKS:\n"
    << "        fully_shard(model.get_submodule(name), mesh=mesh, mp_policy=mp_policy,\n"
    << "                    reshard_after_forward="
    << (s.fsdp.reshard_after_forward ? "True" : "False") << ")\n"
    << "    # The root: what no block holds (embeddings, final norm, head, tied weights).\n"
    << "    fully_shard(model, mesh=mesh, mp_policy=mp_policy,\n"
    << "                reshard_after_forward=" << (s.fsdp.reshard_after_forward ? "True" : "False")
    << ")\n"
    << "    return model\n";
  return o.str();
}

std::string with_fsdp(std::string code, const Model& model, const RunSettings& s) {
  const std::string main = "if __name__ == \"__main__\":";
  const auto main_at = code.find(main);
  if (main_at == std::string::npos) return code + "\n\n" + fsdp_function(model, s);
  code.insert(main_at, fsdp_function(model, s) + "\n\n");
  const std::string anchor = "    model.train()\n";
  const auto at = code.find(anchor, code.find(main));
  if (at != std::string::npos)
    code.insert(at,
                "    if \"WORLD_SIZE\" in os.environ:  # under torchrun: one rank of FSDP2\n"
                "        torch.distributed.init_process_group(\"nccl\")\n"
                "        torch.cuda.set_device(int(os.environ[\"LOCAL_RANK\"]))\n"
                "        model = apply_fsdp(model.cuda())\n");
  if (code.find("import os\n") == std::string::npos) code = "import os\n" + code;
  return code;
}

}  // namespace ckpt
