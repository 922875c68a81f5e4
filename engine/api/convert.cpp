// convert_model: any model file Tessera reads, written as GGUF.
#include "engine/api/model_impl.h"
#include "engine/formats/convert.h"
#include "engine/models/load_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "tessera/model_file.h"

namespace tessera {

Status convert_model(const ConvertOptions& o, std::vector<std::string>* notes) {
  // A llama.cpp file type (q4_K_M: its per-tensor mix), or a weight type
  // core/quant can write (every 2-D weight in it).
  std::optional<QuantFileType> ft = quant_file_type(o.type);
  bool pure = o.pure;
  if (!ft) {
    const auto type = dtype_from_name(o.type);
    if (!type || !can_write_weight_type(*type))
      return invalid_argument("--type: '" + o.type + "' is not a type Tessera can write; expected a file type (" +
                              quant_file_type_names() + ") or a weight type (" + writable_weight_types() + ")");
    ft = pure_file_type(*type);
    pure = true;
  }
  TS_ASSIGN_OR_RETURN(ModelWeights weights, open_weights(o.input));
  std::optional<TokenizerData> tok = weights.tokenizer;
  if (!o.tokenizer_path.empty()) {
    TS_ASSIGN_OR_RETURN(Tokenizer t, Tokenizer::load_file(o.tokenizer_path, weights.config.vocab_size));
    if (t.vocab_size() > weights.config.vocab_size)
      return invalid_argument("-z " + o.tokenizer_path + ": tokenizer has " + std::to_string(t.vocab_size()) +
                              " tokens; the model's vocab_size is " + std::to_string(weights.config.vocab_size));
    tok = t.data();
  }
  return write_model_gguf(weights, tok ? &*tok : nullptr, *ft, pure, o.output, notes);
}

}  // namespace tessera
