#pragma once
// Piece → id lookup over a TokenizerData, as llama.cpp's token_to_id: every
// token type takes part (control and user-defined pieces too), and the
// special-token list that llama.cpp splits text on before any algorithm runs.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "engine/tokenizer/tokenizer_data.h"

namespace tessera {

class Vocab {
 public:
  // Pieces must be unique (llama.cpp asserts it); empty pieces are never found.
  // `data` must outlive the Vocab (the map keys view its strings).
  static Expected<Vocab> build(const TokenizerData& data, const std::string& source);

  int32_t find(std::string_view piece) const;  // -1 when absent
  // Control, user-defined and unknown tokens, longest piece first (then by
  // id): the order llama.cpp's tokenizer_st_partition tries them in.
  const std::vector<int32_t>& specials() const { return specials_; }
  size_t size() const { return size_; }

 private:
  std::unordered_map<std::string_view, int32_t> ids_;
  std::vector<int32_t> specials_;
  size_t size_ = 0;
};

// A piece "<0xNN>" → NN, else -1.
int byte_piece_value(std::string_view piece);

}  // namespace tessera
