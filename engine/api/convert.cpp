// convert_model: any model file Tessera reads, written as GGUF.
#include "engine/formats/convert.h"
#include "engine/models/load_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "tessera/model_file.h"

namespace tessera {

Status convert_model(const ConvertOptions& o, std::vector<std::string>* notes) {
  auto type = dtype_from_name(o.type);
  if (!type || (*type != DType::f32 && *type != DType::f16 && *type != DType::q8_0 && *type != DType::q4_0))
    return invalid_argument("--type: '" + o.type + "'; expected f32, f16, q8_0 or q4_0");
  TS_ASSIGN_OR_RETURN(ModelWeights weights, load_model(o.input));
  std::optional<TokenizerData> tok = weights.tokenizer;
  if (!o.tokenizer_path.empty()) {
    TS_ASSIGN_OR_RETURN(Tokenizer t, Tokenizer::load_file(o.tokenizer_path, weights.config.vocab_size));
    if (t.vocab_size() > weights.config.vocab_size)
      return invalid_argument("-z " + o.tokenizer_path + ": tokenizer has " + std::to_string(t.vocab_size()) +
                              " tokens; the model's vocab_size is " + std::to_string(weights.config.vocab_size));
    tok = t.data();
  }
  return write_model_gguf(weights, tok ? &*tok : nullptr, *type, o.output, notes);
}

}  // namespace tessera
