// A convnet trained on a folder of image files, as keras.io's "Image classification from
// scratch" does it: image_dataset_from_directory with an 80/20 split (subset "both"),
// augmentation layers and Rescaling inside the model so the saved model takes raw pixels, fit,
// save as .keras, evaluate. Then
//   kiln eval <model.keras> --image-folder <folder> --validation-split 0.2 --seed 1337
// evaluates the saved model on the same validation files.
//
// The folder: MNIST digits written as PNG and JPEG files into class folders 0-9 by
// scripts/mnist_image_folder.sh (any folder of class subfolders of 28x28 images works).
//
//   build/examples/image_folder <folder> [epochs=5] [model=image_folder.keras]
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "kiln/core/error.h"
#include "kiln/keras/keras.h"

using namespace kiln;
using namespace kiln::keras;

int main(int argc, char** argv) try {
  if (argc < 2 || argc > 4) {
    std::cerr << "usage: image_folder <folder> [epochs=5] [model=image_folder.keras]\n";
    return 2;
  }
  const std::string folder = argv[1];
  const int epochs = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::string model_path = argc > 3 ? argv[3] : "image_folder.keras";

  // 1. The files: grey 28x28 images, labels from the folder names, 20% held out. The seed
  // makes the shuffle before the split, so the training and validation files never overlap.
  auto [train_ds, val_ds] = utils::image_dataset_from_directory(
      folder, {.color_mode = "grayscale", .batch_size = 32, .image_size = {28, 28}, .seed = 1337,
               .validation_split = 0.2, .subset = "both"});
  std::printf("classes:");
  for (const std::string& c : train_ds.class_names) std::printf(" %s", c.c_str());
  std::printf("\n");

  // 2. The model takes pixels in [0, 255]: small random turns and shifts in training (digits
  // are not flipped; the layers pass images through in evaluate and predict), then Rescaling
  // maps them to [0, 1] inside it.
  Sequential model({
      InputLayer({.shape = {28, 28, 1}}),
      layers::RandomRotation(0.03, {.fill_mode = "constant", .seed = 1}),
      layers::RandomTranslation(0.05, 0.05, {.fill_mode = "constant", .seed = 2}),
      layers::Rescaling(1.0 / 255),
      Conv2D(16, {3, 3}, {.activation = "relu"}),
      MaxPooling2D({.pool_size = {2, 2}}),
      Conv2D(32, {3, 3}, {.activation = "relu"}),
      MaxPooling2D({.pool_size = {2, 2}}),
      Flatten(),
      Dense(static_cast<int64_t>(train_ds.class_names.size())),
  });
  model.compile({.optimizer = Adam({.learning_rate = 2e-3}),
                 .loss = SparseCategoricalCrossentropy({.from_logits = true}),
                 .metrics = {"accuracy"}});
  model.summary();

  // 3. Train; each epoch reads and decodes the files again in a parallel map.
  model.fit(train_ds, {.epochs = epochs, .validation_data = val_ds, .verbose = 2});

  // 4. Save, and evaluate on the validation files (what `kiln eval` prints for the saved model).
  model.save(model_path);
  const Logs result = model.evaluate(val_ds, {.verbose = 0});
  std::printf("saved %s\nvalidation loss %.9g, validation accuracy %.9g (%zu files; chance %.3f)\n",
              model_path.c_str(), result.at("loss"), result.at("accuracy"), val_ds.file_paths.size(),
              1.0 / static_cast<double>(train_ds.class_names.size()));
  return 0;
} catch (const kiln::Error& e) {
  std::cerr << "image_folder: " << e.kind() << ": " << e.what() << "\n";
  return 1;
}
