//===- OnnxModel.h - A parsed ONNX model and where its bytes are -*- C++
//-*-===//
//
// Part of meshc. Loads an ONNX ModelProto (protobuf, Debian's libonnx_proto)
// and records, for every initializer, where its data lies on disk — in the
// model file itself (raw_data or packed float_data) or in an external-data
// file — so that import can refer to weights instead of copying them.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_IMPORT_ONNXMODEL_H
#define MESHC_COMPILER_IMPORT_ONNXMODEL_H

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace onnx {
class ModelProto;
class TensorProto;
} // namespace onnx

namespace meshc::onnximport {

/// Where a tensor's little-endian data lies: `file` is relative to the
/// model's folder.
struct DataRef {
  std::string file;
  int64_t offset = 0;
  int64_t length = 0;
};

class OnnxModel {
public:
  ~OnnxModel();

  /// Parses `path`. Fails with a message naming the file for an empty,
  /// truncated or corrupt protobuf.
  static llvm::Expected<std::unique_ptr<OnnxModel>> load(llvm::StringRef path);

  const onnx::ModelProto &proto() const { return *proto_; }
  /// The model file's path as given, its folder and its file name.
  llvm::StringRef path() const { return path_; }
  llvm::StringRef folder() const { return folder_; }
  llvm::StringRef fileName() const { return fileName_; }

  /// The opset version the model imports for `domain` ("" and "ai.onnx" are
  /// the same domain), or std::nullopt.
  std::optional<int64_t> opsetVersion(llvm::StringRef domain) const;

  /// Where the data of initializer `index` of the main graph lies, when it is
  /// stored as contiguous little-endian bytes (raw_data, packed float_data or
  /// external data). Checks external-data paths (relative, inside the model's
  /// folder, file present and long enough). std::nullopt when the data is
  /// stored some other way (varint-packed int32_data / int64_data), which
  /// import reads through the protobuf instead.
  llvm::Expected<std::optional<DataRef>>
  initializerData(int index, int64_t expectedBytes) const;

  /// Where the data of `t`, stored as external data (data_location
  /// EXTERNAL), lies: its file, relative to the model's folder, must stay
  /// inside that folder and hold `expectedBytes` at its offset. `what` names
  /// the tensor in the error otherwise.
  llvm::Expected<DataRef> externalData(const onnx::TensorProto &t,
                                       int64_t expectedBytes,
                                       const llvm::Twine &what) const;

  /// Where the tensor of the Constant node of the main graph whose output is
  /// `output` lies in the model file, when its `value` is stored as
  /// contiguous little-endian bytes (raw_data or packed float_data) of
  /// `expectedBytes`; std::nullopt otherwise.
  std::optional<DataRef> constantData(llvm::StringRef output,
                                      int64_t expectedBytes) const;

private:
  OnnxModel();
  llvm::Error scanInitializerOffsets(llvm::StringRef bytes);

  std::unique_ptr<onnx::ModelProto> proto_;
  std::string path_, folder_, fileName_;
  /// Initializer index -> offset/length in the model file of its raw_data
  /// (or packed float_data) payload.
  llvm::DenseMap<int, std::pair<int64_t, int64_t>> embedded_;
  /// The same for the `value` of each Constant node, by its output.
  llvm::StringMap<std::pair<int64_t, int64_t>> constants_;
};

/// The name ONNX gives a domain in messages ("ai.onnx" for "").
llvm::StringRef domainName(llvm::StringRef domain);

} // namespace meshc::onnximport

#endif // MESHC_COMPILER_IMPORT_ONNXMODEL_H
