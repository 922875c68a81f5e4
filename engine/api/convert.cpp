// convert_model: any model file Tessera reads, written as GGUF.
#include "engine/formats/convert.h"
#include "engine/models/load_model.h"
#include "engine/tokenizer/tokenizer.h"
#include "tessera/model_file.h"

namespace tessera {

Status convert_model(const ConvertOptions& o, std::vector<std::string>* notes) {
  auto type = dtype_from_name(o.type);
  if (!type) return invalid_argument("--type: '" + o.type + "' is not a weight type; expected " + writable_weight_types());
  if (!can_write_weight_type(*type))
    return unsupported("--type: " + o.type + " cannot be written: core/quant has no quantizer for it; expected " +
                       writable_weight_types());
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
