//===- OnnxModel.cpp - A parsed ONNX model and where its bytes are --------===//
//
// Part of meshc.
//
//===----------------------------------------------------------------------===//
#include "compiler/import/OnnxModel.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/onnx_pb.h>

#include <climits>

using namespace llvm;
using google::protobuf::io::CodedInputStream;
using WireFormat = google::protobuf::internal::WireFormatLite;

namespace meshc::onnximport {

namespace {

/// The importer reports these at the model file's location, so the message
/// does not repeat the path.
Error modelError(StringRef /*path*/, const Twine &why) {
  return createStringError(inconvertibleErrorCode(), why);
}

// Field numbers of onnx.proto that the offset scan follows.
constexpr int kModelGraph = 7;       // ModelProto.graph
constexpr int kGraphNode = 1;        // GraphProto.node
constexpr int kGraphInitializer = 5; // GraphProto.initializer
constexpr int kNodeAttribute = 5;    // NodeProto.attribute
constexpr int kAttributeTensor = 5;  // AttributeProto.t
constexpr int kTensorFloatData = 4;  // TensorProto.float_data (packed)
constexpr int kTensorRawData = 9;    // TensorProto.raw_data

/// Visits the length-delimited fields numbered `field` of the message that
/// fills `in`; `fn(offset, length)` gets each payload's absolute file offset.
/// Stops at the first malformed tag.
template <typename Fn>
bool forEachField(CodedInputStream &in, int64_t base, int field, Fn fn) {
  while (uint32_t tag = in.ReadTag()) {
    if (WireFormat::GetTagFieldNumber(tag) == field &&
        WireFormat::GetTagWireType(tag) ==
            WireFormat::WIRETYPE_LENGTH_DELIMITED) {
      uint32_t length = 0;
      if (!in.ReadVarint32(&length))
        return false;
      int64_t offset = base + in.CurrentPosition();
      if (!fn(offset, static_cast<int64_t>(length)) || !in.Skip(length))
        return false;
    } else if (!WireFormat::SkipField(&in, tag)) {
      return false;
    }
  }
  return true;
}

} // namespace

StringRef domainName(StringRef domain) {
  return domain.empty() ? "ai.onnx" : domain;
}

OnnxModel::OnnxModel() : proto_(std::make_unique<onnx::ModelProto>()) {}
OnnxModel::~OnnxModel() = default;

Expected<std::unique_ptr<OnnxModel>> OnnxModel::load(StringRef path) {
  auto buffer = MemoryBuffer::getFile(path, /*IsText=*/false,
                                      /*RequiresNullTerminator=*/false);
  if (!buffer)
    return modelError(path, "cannot open: " + buffer.getError().message());
  StringRef bytes = (*buffer)->getBuffer();
  if (bytes.empty())
    return modelError(path, "the file is empty, not an ONNX model");
  if (bytes.size() > static_cast<size_t>(INT_MAX))
    return modelError(path, "larger than 2 GB; protobuf cannot hold it "
                            "(store the weights as external data)");

  std::unique_ptr<OnnxModel> model(new OnnxModel());
  google::protobuf::io::ArrayInputStream stream(bytes.data(), bytes.size());
  CodedInputStream in(&stream);
  in.SetTotalBytesLimit(INT_MAX);
  if (!model->proto_->ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
    return modelError(path, "not a valid ONNX model (the protobuf is "
                            "truncated or corrupt)");
  if (!model->proto_->has_graph())
    return modelError(path, "the model has no graph");

  model->path_ = path.str();
  // "model.onnx" lies in the working folder: ".", not "" (which would read
  // as "no folder" where weights are looked up).
  model->folder_ = sys::path::parent_path(path).str();
  if (model->folder_.empty())
    model->folder_ = ".";
  model->fileName_ = sys::path::filename(path).str();
  if (Error e = model->scanInitializerOffsets(bytes))
    return std::move(e);
  return std::move(model);
}

/// Walks ModelProto.graph.initializer[i].{raw_data,float_data} (and the
/// main graph's Constant nodes' `value` tensors) on the wire to learn the
/// file offset of each payload; the parsed proto does not keep it.
Error OnnxModel::scanInitializerOffsets(StringRef bytes) {
  const auto *data = reinterpret_cast<const uint8_t *>(bytes.data());
  auto stream = [&](int64_t offset, int64_t length) {
    return CodedInputStream(data + offset, static_cast<int>(length));
  };
  // The payload of the TensorProto at [offset, offset + length): its
  // raw_data, else its packed float_data, as `found` (offset -1: neither).
  auto scanPayload = [&](int64_t offset, int64_t length,
                         std::pair<int64_t, int64_t> &found) {
    auto record = [&](int64_t o, int64_t l) {
      found = {o, l};
      return true;
    };
    found = {-1, 0};
    CodedInputStream raw = stream(offset, length);
    bool ok = forEachField(raw, offset, kTensorRawData, record);
    if (ok && found.first < 0) {
      CodedInputStream packed = stream(offset, length);
      ok = forEachField(packed, offset, kTensorFloatData, record);
    }
    return ok;
  };
  int index = 0;
  auto scanTensor = [&](int64_t offset, int64_t length) {
    std::pair<int64_t, int64_t> found;
    bool ok = scanPayload(offset, length, found);
    if (found.first >= 0)
      embedded_[index] = found;
    ++index;
    return ok;
  };
  // The tensor of each Constant node's `value` attribute, by the node's
  // output.
  int nodeIndex = 0;
  auto scanNode = [&](int64_t offset, int64_t length) {
    const onnx::NodeProto &node = proto_->graph().node(nodeIndex++);
    if (node.op_type() != "Constant" || !node.domain().empty() ||
        node.output_size() != 1)
      return true;
    int attribute = 0;
    auto scanAttribute = [&](int64_t o, int64_t l) {
      if (attribute >= node.attribute_size() ||
          node.attribute(attribute++).name() != "value")
        return true;
      auto scanValue = [&](int64_t to, int64_t tl) {
        std::pair<int64_t, int64_t> found;
        bool ok = scanPayload(to, tl, found);
        if (found.first >= 0)
          constants_[node.output(0)] = found;
        return ok;
      };
      CodedInputStream attr = stream(o, l);
      return forEachField(attr, o, kAttributeTensor, scanValue);
    };
    CodedInputStream in = stream(offset, length);
    return forEachField(in, offset, kNodeAttribute, scanAttribute);
  };
  auto scanGraph = [&](int64_t offset, int64_t length) {
    CodedInputStream graph = stream(offset, length);
    if (!forEachField(graph, offset, kGraphInitializer, scanTensor))
      return false;
    CodedInputStream nodes = stream(offset, length);
    return forEachField(nodes, offset, kGraphNode, scanNode);
  };
  CodedInputStream model = stream(0, bytes.size());
  if (!forEachField(model, 0, kModelGraph, scanGraph) ||
      index != proto_->graph().initializer_size() ||
      nodeIndex != proto_->graph().node_size())
    return modelError(path_, "could not locate the initializer data in the "
                             "protobuf");
  return Error::success();
}

std::optional<DataRef> OnnxModel::constantData(StringRef output,
                                               int64_t expectedBytes) const {
  auto it = constants_.find(output);
  if (it == constants_.end() || it->second.second != expectedBytes)
    return std::nullopt;
  return DataRef{fileName_, it->second.first, it->second.second};
}

std::optional<int64_t> OnnxModel::opsetVersion(StringRef domain) const {
  StringRef wanted = domainName(domain);
  for (const auto &opset : proto_->opset_import())
    if (domainName(opset.domain()) == wanted)
      return opset.version();
  return std::nullopt;
}

Expected<DataRef> OnnxModel::externalData(const onnx::TensorProto &t,
                                          int64_t expectedBytes,
                                          const Twine &what) const {
  auto tensorError = [&](const Twine &why) {
    return modelError(path_, what + ": " + why);
  };
  DataRef ref;
  int64_t length = -1;
  for (const auto &entry : t.external_data()) {
    StringRef key = entry.key(), value = entry.value();
    if (key == "location")
      ref.file = value.str();
    else if ((key == "offset" && value.getAsInteger(10, ref.offset)) ||
             (key == "length" && value.getAsInteger(10, length)))
      return tensorError("external-data " + key + " '" + value +
                         "' is not an integer");
  }
  if (ref.file.empty())
    return tensorError("external data without a 'location'");
  if (sys::path::is_absolute(ref.file) ||
      is_contained(
          make_range(sys::path::begin(ref.file), sys::path::end(ref.file)),
          ".."))
    return tensorError("external-data location '" + ref.file +
                       "' leaves the model's folder (absolute path or "
                       "'..'); refusing to read it");
  if (length >= 0 && length != expectedBytes)
    return tensorError("external-data length " + Twine(length) +
                       " does not match its type (" + Twine(expectedBytes) +
                       " bytes)");
  ref.length = expectedBytes;

  SmallString<256> full(folder_);
  sys::path::append(full, ref.file);
  if (sys::fs::is_directory(full))
    return tensorError("external-data location '" + ref.file +
                       "' is a folder, not a file");
  uint64_t size = 0;
  if (std::error_code ec = sys::fs::file_size(full, size))
    return tensorError("external-data file '" + ref.file +
                       "' cannot be opened: " + ec.message());
  if (ref.offset < 0 || static_cast<uint64_t>(ref.offset) > size ||
      static_cast<uint64_t>(ref.length) > size - ref.offset)
    return tensorError("external-data file '" + ref.file + "' holds " +
                       Twine(size) + " bytes, too few for offset " +
                       Twine(ref.offset) + " + length " + Twine(ref.length));
  return ref;
}

Expected<std::optional<DataRef>>
OnnxModel::initializerData(int index, int64_t expectedBytes) const {
  const onnx::TensorProto &t = proto_->graph().initializer(index);
  auto tensorError = [&](const Twine &why) {
    return modelError(path_, "initializer '" + t.name() + "': " + why);
  };

  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    Expected<DataRef> ref =
        externalData(t, expectedBytes, "initializer '" + t.name() + "'");
    if (!ref)
      return ref.takeError();
    return std::optional<DataRef>(*ref);
  }

  auto it = embedded_.find(index);
  if (it == embedded_.end())
    return std::optional<DataRef>(); // varint-packed, or no data at all
  auto [offset, length] = it->second;
  if (length != expectedBytes)
    return tensorError("holds " + Twine(length) + " bytes but its type needs " +
                       Twine(expectedBytes));
  return std::optional<DataRef>(DataRef{fileName_, offset, length});
}

} // namespace meshc::onnximport
