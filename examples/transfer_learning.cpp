// Transfer learning as keras.io's guide does it: a MobileNetV2 base, frozen, under a new head;
// fit the head; unfreeze the base's top layers and fit again with a 10x smaller learning rate;
// save as .keras; reload; evaluate.
//
// The base's weights: Keras's ImageNet file when the user gives its path (`--weights`, e.g.
// mobilenet_v2_weights_tf_dim_ordering_tf_kernels_0.35_96_no_top.h5 with `--alpha 0.35
// --image-size 96`); otherwise random, which the run says. `--pretrain <file>` stands in for
// ImageNet where there is no network: it trains the whole MobileNetV2 on some classes of the
// folder and saves the base's weights in Keras's layout, which a second run then transfers to
// the other classes:
//
//   scripts/mnist_image_folder.sh digits 1000
//   build/examples/transfer_learning digits --classes 0,1,2,3,4 --pretrain base.h5
//   build/examples/transfer_learning digits --classes 5,6,7,8,9 --weights base.h5
//
// Options: --classes a,b,... (default: every class folder), --weights <file>, --pretrain <file>,
// --image-size N (default 32), --alpha A (default 0.35), --epochs N (default 3 per phase),
// --fine-tune-at N (default 100, as Keras's guide: the base's layers from index N on train in
// the fine-tuning phase, the first N stay frozen),
// --model <file.keras> (default transfer_learning.keras).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/core/error.h"
#include "kiln/keras/applications/applications.h"
#include "kiln/keras/keras.h"

using namespace kiln;
using namespace kiln::keras;

namespace {

struct Args {
  std::string folder;
  std::vector<std::string> classes;
  std::optional<std::string> weights;
  std::string pretrain;
  int64_t image_size = 32;
  double alpha = 0.35;
  int epochs = 3;
  int64_t fine_tune_at = 100;
  std::string model_path = "transfer_learning.keras";
};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

Args parse(int argc, char** argv) {
  if (argc < 2) throw ValueError("usage: transfer_learning <folder> [--classes a,b,...] [--weights <file>] "
                                 "[--pretrain <file>] [--image-size N] [--alpha A] [--epochs N] "
                                 "[--fine-tune-at N] [--model <file.keras>]");
  Args a;
  a.folder = argv[1];
  for (int i = 2; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw ValueError(flag + " needs a value");
    const std::string value = argv[i + 1];
    if (flag == "--classes") a.classes = split_commas(value);
    else if (flag == "--weights") a.weights = value;
    else if (flag == "--pretrain") a.pretrain = value;
    else if (flag == "--image-size") a.image_size = std::atoll(value.c_str());
    else if (flag == "--alpha") a.alpha = std::atof(value.c_str());
    else if (flag == "--epochs") a.epochs = std::atoi(value.c_str());
    else if (flag == "--fine-tune-at") a.fine_tune_at = std::atoll(value.c_str());
    else if (flag == "--model") a.model_path = value;
    else throw ValueError("unknown option " + flag);
  }
  return a;
}

double accuracy(Model& model, const data::Dataset& ds) { return model.evaluate(ds, {.verbose = 0}).at("accuracy"); }

}  // namespace

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);
  const int64_t size = args.image_size;

  // 1. The files: the chosen class folders, RGB (MobileNetV2 takes 3 channels), 20% held out.
  auto [train_ds, val_ds] = utils::image_dataset_from_directory(
      args.folder, {.class_names = args.classes, .color_mode = "rgb", .batch_size = 32,
                    .image_size = {size, size}, .seed = 1337, .validation_split = 0.2, .subset = "both"});
  const auto num_classes = static_cast<int64_t>(train_ds.class_names.size());
  std::printf("classes:");
  for (const std::string& c : train_ds.class_names) std::printf(" %s", c.c_str());
  std::printf(" (%zu training files, %zu validation files)\n", train_ds.file_paths.size(), val_ds.file_paths.size());

  // 2. The base without its classifier, global-average-pooled to one feature vector per image.
  if (!args.weights && args.pretrain.empty())
    std::printf("no --weights given: the MobileNetV2 base starts from random weights\n");
  auto base = std::make_shared<Functional>(applications::MobileNetV2(
      {.input_shape = {size, size, 3}, .alpha = args.alpha, .include_top = false, .weights = args.weights,
       .pooling = "avg"}));

  // MobileNetV2 takes pixels in [-1, 1] (its preprocess_input); Rescaling does it inside the
  // model, so the saved model takes raw pixels.
  KerasTensor inputs = Input({size, size, 3});
  KerasTensor x = layers::Rescaling(1.0 / 127.5, -1.0)(inputs);

  if (!args.pretrain.empty()) {
    // Stand-in for ImageNet: the whole network trains (its BatchNormalization layers too).
    // MobileNetV2's BatchNormalization momentum, 0.999, averages over ~1000 steps, more than
    // this run takes: 0.9 lets the moving statistics that the frozen base will use settle
    // (Keras: layer.momentum = 0.9). The weights file is the same either way.
    for (const LayerHandle& l : base->layers())
      if (auto* bn = dynamic_cast<BatchNormalization*>(l.get())) bn->set_momentum(0.9);
    x = (*base)(x);
    Functional model({inputs}, Dense(num_classes)(x));
    model.compile({.optimizer = Adam({.learning_rate = 1e-3}),
                   .loss = SparseCategoricalCrossentropy({.from_logits = true}), .metrics = {"accuracy"}});
    model.fit(train_ds, {.epochs = args.epochs, .verbose = 2});
    std::printf("pretrained: validation accuracy %.4f\n", accuracy(model, val_ds));
    base->save_weights(args.pretrain);
    std::printf("saved the base's weights to %s\n", args.pretrain.c_str());
    return 0;
  }

  // 3. Freeze the base and call it in inference mode: its BatchNormalization layers keep their
  // statistics even after it is unfrozen below (Keras's guide passes training=False too).
  base->set_trainable(false);
  x = (*base)(x, {.training = false});
  x = Dropout(0.2)(x);
  Functional model({inputs}, Dense(num_classes)(x));
  model.compile({.optimizer = Adam({.learning_rate = 1e-3}),
                 .loss = SparseCategoricalCrossentropy({.from_logits = true}), .metrics = {"accuracy"}});
  model.summary();
  std::printf("before training: validation accuracy %.4f (chance %.3f)\n", accuracy(model, val_ds),
              1.0 / static_cast<double>(num_classes));
  model.fit(train_ds, {.epochs = args.epochs, .validation_data = val_ds, .verbose = 2});
  const double frozen_accuracy = accuracy(model, val_ds);
  std::printf("head trained, base frozen: validation accuracy %.4f\n", frozen_accuracy);

  // 4. Fine-tune: unfreeze the base, freeze all but its top layers again, recompile with a
  // learning rate 10x smaller (recompiling is what makes the change take effect).
  base->set_trainable(true);
  const auto& base_layers = base->layers();
  const int64_t fine_tune_at = std::min<int64_t>(args.fine_tune_at, static_cast<int64_t>(base_layers.size()));
  for (int64_t i = 0; i < fine_tune_at; ++i) base_layers[static_cast<size_t>(i)]->set_trainable(false);
  model.compile({.optimizer = Adam({.learning_rate = 1e-4}),
                 .loss = SparseCategoricalCrossentropy({.from_logits = true}), .metrics = {"accuracy"}});
  std::printf("fine-tuning the base's last %lld of %zu layers (%zu trainable weights)\n",
              static_cast<long long>(static_cast<int64_t>(base_layers.size()) - fine_tune_at), base_layers.size(),
              model.trainable_weights().size());
  model.fit(train_ds, {.epochs = args.epochs, .validation_data = val_ds, .verbose = 2});
  const double tuned_accuracy = accuracy(model, val_ds);
  std::printf("fine-tuned: validation accuracy %.4f\n", tuned_accuracy);

  // 5. Save, reload, evaluate the reloaded model on the same files.
  model.save(args.model_path);
  std::unique_ptr<Model> reloaded = load_model(args.model_path);
  const double reloaded_accuracy = accuracy(*reloaded, val_ds);
  std::printf("saved %s; reloaded: validation accuracy %.4f\n", args.model_path.c_str(), reloaded_accuracy);
  std::printf("{\"example\": \"transfer_learning\", \"classes\": %lld, \"frozen_accuracy\": %.4f, "
              "\"fine_tuned_accuracy\": %.4f, \"reloaded_accuracy\": %.4f, \"weights\": \"%s\"}\n",
              static_cast<long long>(num_classes), frozen_accuracy, tuned_accuracy, reloaded_accuracy,
              args.weights ? args.weights->c_str() : "random");
  return 0;
} catch (const kiln::Error& e) {
  std::cerr << "transfer_learning: " << e.kind() << ": " << e.what() << "\n";
  return 1;
}
