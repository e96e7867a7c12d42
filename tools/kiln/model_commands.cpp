// `kiln summary`, `inspect`, `eval` and `convert` over keras::load_model (every format Kiln reads).
#include "tools/kiln/model_commands.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <regex>

#include "kiln/core/check.h"
#include "kiln/data/datasets/mnist.h"
#include "kiln/data/readers/npy_reader.h"
#include "kiln/io/file_reader.h"
#include "kiln/io/hdf5_file.h"
#include "kiln/io/zip_archive.h"
#include "kiln/keras/keras.h"
#include "kiln/keras/saving/saving.h"
#include "kiln/keras/utils/image_dataset_utils.h"

namespace kiln::cli {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) { return s.ends_with(suffix); }

bool is_safetensors_path(const std::string& path) { return ends_with(path, ".safetensors"); }

// The MNIST test split as the model takes it: pixels scaled to [0, 1] in the model's per-example
// input shape (any shape of 784 values: (28, 28), (28, 28, 1), (784)), integer labels.
std::pair<HostTensor, HostTensor> mnist_test_split(const keras::Model& model, const std::string& model_path) {
  Dims input = model.layers().empty() ? Dims{} : model.layers().front()->built_input_shape();
  if (input.empty()) input = {28, 28};
  int64_t per_example = 1;
  for (int64_t d : input) per_example *= d;
  if (per_example != 28 * 28)
    KILN_THROW(ShapeError, "[", model_path, "] the model takes inputs of ", per_example,
               " values per example; MNIST images have 784 (28x28). Hint: evaluate it on its own data with "
               "--x x.npy --y y.npy.");
  const datasets::mnist::Split test = datasets::mnist::load_data().test;
  HostTensor x = test.x.astype(DType::kF32);
  for (float& v : x.data<float>()) v /= 255.0f;
  Dims dims = {x.dims()[0]};
  dims.insert(dims.end(), input.begin(), input.end());
  return {x.reshape(dims), test.y.astype(DType::kI32)};
}

// Nine significant digits give back any f32 metric exactly.
std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}
// JSON has no NaN or infinity (a diverged loss): those are null there.
std::string json_number(double v) { return std::isfinite(v) ? number_text(v) : "null"; }

}  // namespace

// The format, as load_model decides it, and the Keras version its writer recorded.
std::pair<std::string, std::string> format_and_version(const std::string& path) {
  if (std::filesystem::is_directory(path)) return {"Kiln model directory (model.json + safetensors)", "-"};
  if (ends_with(path, ".keras") && !keras::has_hdf5_signature(path)) {
    const std::string metadata = io::ZipReader::open(path).read("metadata.json");
    std::smatch m;
    const bool found = std::regex_search(metadata, m, std::regex(R"re("keras_version"\s*:\s*"([^"]*)")re"));
    return {"Keras 3 archive (.keras)", found ? m[1].str() : "unknown"};
  }
  io::Hdf5File file = io::Hdf5File::open(path);
  const std::string version =
      file.root().has_attribute("keras_version") ? file.root().read_string_attribute("keras_version") : "unknown";
  return {"Keras 2 HDF5 (.h5)", version};
}

int summary(const std::string& path, std::ostream& out) {
  std::unique_ptr<keras::Model> model = keras::load_model(path, {.compile = false});
  model->summary(out);
  return 0;
}

namespace {

// Splits "<output>=<path>" when <output> names one of the model's outputs; {"", value} otherwise.
std::pair<std::string, std::string> output_and_path(const std::string& value, const std::vector<std::string>& outputs) {
  const size_t eq = value.find('=');
  if (eq != std::string::npos && std::find(outputs.begin(), outputs.end(), value.substr(0, eq)) != outputs.end())
    return {value.substr(0, eq), value.substr(eq + 1)};
  return {"", value};
}

// The arrays of a repeatable option (--y, --sample-weight), one per output in the order of the
// model's outputs: given as <output>=<file.npy> each, or as files in output order.
std::vector<HostTensor> per_output_arrays(const Args& args, const std::string& option, const keras::Model& model,
                                          const std::string& path) {
  const std::vector<std::string> outputs = model.output_names(), values = args.get_all(option);
  std::string names;
  for (const std::string& o : outputs) names += (names.empty() ? "" : ", ") + o;
  std::vector<std::pair<std::string, std::string>> given;
  size_t named = 0;
  for (const std::string& v : values) {
    given.push_back(output_and_path(v, outputs));
    if (!given.back().first.empty()) ++named;
  }
  if (given.size() != outputs.size() || (named != 0 && named != given.size()))
    KILN_THROW(ValueError, "[kiln eval] ", path, " has ", outputs.size(), " output(s) (", names, "), and received ",
               values.size(), " ", option, " value(s)", named != 0 && named != given.size() ? ", some by output name and some not" : "",
               ". Hint: ", option, " <output>=<file.npy> once per output, or one file per output in this order.");
  std::vector<HostTensor> out(outputs.size());
  for (size_t i = 0; i < given.size(); ++i) {
    const size_t slot = named == 0 ? i : static_cast<size_t>(std::find(outputs.begin(), outputs.end(), given[i].first) - outputs.begin());
    if (out[slot].defined())
      KILN_THROW(ValueError, "[kiln eval] ", option, " names the output '", outputs[slot], "' twice.");
    out[slot] = data::read_npy(given[i].second);
  }
  return out;
}

// `--image-folder dir`: the folder as image_dataset_from_directory reads it for this model (its
// input's height, width and channels), the subset named by --validation-split/--seed/--subset.
data::Dataset image_folder_dataset(const Args& args, const keras::Model& model, const std::string& path,
                                   int64_t batch_size) {
  const Dims input = model.layers().empty() ? Dims{} : model.layers().front()->built_input_shape();
  if (input.size() != 3 || (input[2] != 1 && input[2] != 3 && input[2] != 4))
    KILN_THROW(ShapeError, "[kiln eval] ", path, " takes inputs of shape ", Shape(DType::kF32, input), "; --image-folder "
               "gives images (height, width, channels) with 1, 3 or 4 channels.");
  double split = 0;
  if (args.has("--validation-split")) {
    const std::string text = args.get("--validation-split");
    char* end = nullptr;
    split = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0')
      KILN_THROW(ValueError, "[kiln eval] --validation-split takes a fraction such as 0.2, received '", text, "'.");
  }
  const std::string subset = args.get("--subset", split > 0 ? "validation" : "");
  if (!subset.empty() && subset != "training" && subset != "validation")
    KILN_THROW(ValueError, "[kiln eval] --subset must be training or validation, received '", subset, "'.");
  if (!subset.empty() && split == 0)
    KILN_THROW(ValueError, "[kiln eval] --subset ", subset, " needs --validation-split (the fraction training used).");
  std::optional<uint64_t> seed;
  if (args.has("--seed")) {
    const std::string text = args.get("--seed");
    char* end = nullptr;
    seed = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || text[0] == '-')
      KILN_THROW(ValueError, "[kiln eval] --seed takes a non-negative integer, received '", text, "'.");
  }
  // Subset "both" splits exactly as training did; its validation half is read in file order.
  auto both = keras::utils::image_dataset_from_directory(
      args.get("--image-folder"),
      {.label_mode = args.get("--label-mode", "int"), .color_mode = input[2] == 1 ? "grayscale" : input[2] == 3 ? "rgb" : "rgba",
       .batch_size = batch_size, .image_size = {input[0], input[1]}, .seed = seed, .validation_split = split,
       .subset = subset.empty() ? "" : "both", .interpolation = args.get("--interpolation", "bilinear"),
       .verbose = false});
  if (subset.empty()) return both;
  return subset == "training" ? both.get<0>() : both.get<1>();
}

}  // namespace

int eval(const Args& args, std::ostream& out) {
  const std::string& path = args.positional.at(0);
  const bool npy = args.has("--x") || args.has("--y");
  const int sources = int(args.has("--mnist")) + int(npy) + int(args.has("--image-folder"));
  if (sources != 1 || (npy && !(args.has("--x") && args.has("--y"))))
    KILN_THROW(ValueError, "[kiln eval] ", path, ": name the data as --mnist, or as --x x.npy --y y.npy (both), or as "
               "--image-folder dir.");
  const int64_t batch_size = args.get_positive("--batch-size", 32);
  std::unique_ptr<keras::Model> model = keras::load_model(path);
  if (!model->is_compiled())
    KILN_THROW(ValueError, "[", path, "] holds no compile arguments (loss, metrics), so it cannot be evaluated. "
               "Hint: save the model after compile() with include_optimizer=true.");
  HostTensor x;
  std::vector<HostTensor> ys;
  if (npy) {
    x = data::read_npy(args.get("--x"));
    ys = per_output_arrays(args, "--y", *model, path);
  } else if (args.has("--mnist")) {
    if (model->num_outputs() != 1)
      KILN_THROW(ValueError, "[kiln eval] ", path, " has ", model->num_outputs(), " outputs; --mnist gives one label "
                 "array. Hint: --x x.npy --y <output>=y.npy per output.");
    auto [mx, my] = mnist_test_split(*model, path);
    x = std::move(mx);
    ys = {std::move(my)};
  }
  keras::EvaluateOptions options{.verbose = 0};
  if (args.has("--sample-weight")) {
    if (args.has("--image-folder"))
      KILN_THROW(ValueError, "[kiln eval] --sample-weight is for arrays (--mnist, --x/--y), not --image-folder.");
    if (args.get_all("--sample-weight").size() == 1 && args.get("--sample-weight").find('=') == std::string::npos)
      options.sample_weight.all = data::read_npy(args.get("--sample-weight"));
    else
      options.sample_weight.per_output = per_output_arrays(args, "--sample-weight", *model, path);
  }
  const keras::Logs logs = args.has("--image-folder")
                               ? model->evaluate(image_folder_dataset(args, *model, path, batch_size), std::move(options))
                               : model->evaluate(x, ys, batch_size, std::move(options));
  std::string json = "{";
  for (const auto& [name, value] : logs) {
    out << name << ": " << number_text(value) << "\n";
    json += str_cat(json.size() > 1 ? ", " : "", "\"", name, "\": ", json_number(value));
  }
  out << json << "}\n";
  return 0;
}

int convert(const Args& args, std::ostream& out) {
  const std::string& from = args.positional.at(0);
  const std::string& to = args.positional.at(1);
  std::unique_ptr<keras::Model> model;
  if (is_safetensors_path(from)) {
    // Weights alone: the architecture comes from a model file, or a model.to_json() text.
    const std::string config = args.get("--config");
    if (config.empty())
      KILN_THROW(ValueError, "[", from, "] holds weights only, no architecture. Hint: name a model with that "
                 "architecture, kiln convert ", from, " ", to, " --config model.h5 (or .keras, a model directory, "
                 "or a model.to_json() .json file).");
    model = ends_with(config, ".json") ? keras::model_from_json(io::read_file(config))
                                       : keras::load_model(config, {.compile = false});
    model->load_weights(from);
  } else {
    if (args.has("--config"))
      KILN_THROW(ValueError, "[kiln convert] --config is for a .safetensors input; ", from,
                 " holds its own architecture. Hint: drop --config.");
    model = keras::load_model(from);
  }
  if (is_safetensors_path(to)) model->save_weights(to);
  else model->save(to);
  out << from << " -> " << to << " (" << model->count_params() << " parameters"
      << (is_safetensors_path(to) ? ", weights only" : model->is_compiled() ? "" : ", not compiled") << ")\n";
  return 0;
}

}  // namespace kiln::cli
