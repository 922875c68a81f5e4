#pragma once
// Which type each tensor of a model gets when it is quantized to a llama.cpp
// file type ("q4_K_M" ...): llama.cpp's `llama-quantize` rules (no
// importance matrix, not --pure) for the file types Tessera can write, so
// that `tessera convert --type q4_K_M` gives the mix llama.cpp's would.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"

namespace tessera {

struct QuantFileType {
  std::string_view name;  // as --type takes it: "q4_K_M"
  uint32_t llama_ftype;   // general.file_type
  DType base;             // the type most tensors get
};

// "q4_K_M" (any case), or nullopt. f32, f16, bf16, q8_0, q4_0, q4_1, q5_0,
// q5_1, q4_K_S, q4_K_M, q5_K_S, q5_K_M, q6_K.
std::optional<QuantFileType> quant_file_type(std::string_view name);
std::string quant_file_type_names();  // the list, for error messages

struct TensorToWrite {
  std::string name;  // GGUF name: blk.N.attn_v.weight, output.weight, ...
  Shape shape;       // outermost first; shape.last() is a row's length
};

struct QuantMixOptions {
  int32_t n_layers = 0;  // the model's block count (llama.cpp's n_layer)
  bool pure = false;     // every quantizable tensor in the base type (llama-quantize --pure)
};

// One type per tensor, in order. A layer's attn_v / ffn_down is placed by
// the N of its blk.N. name (llama-quantize counts them in file order, which
// is layer order in the files llama.cpp writes). Norms, 1-D
// tensors and non-".weight" tensors keep f32; rows that are not whole
// blocks fall back as llama.cpp's do (q4_K → q5_0, q5_K → q5_1, q6_K →
// q8_0, then f16).
// A fallback is appended to *notes (may be null), one line naming the tensor.
std::vector<DType> choose_tensor_types(const QuantFileType& ft, const std::vector<TensorToWrite>& tensors,
                                       const QuantMixOptions& o, std::vector<std::string>* notes = nullptr);

// The file type that writes every 2-D weight in `type` (as --pure does).
QuantFileType pure_file_type(DType type);

}  // namespace tessera
