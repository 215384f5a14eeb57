//===- train_cli.cpp - Command line of the train subcommand -----*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// Parses the command line of `<exe> train` (every option, and the rules
// that tie them together: one --data per train input, --steps or --epochs,
// --checkpoint-dir with --checkpoint-every or --snapshot-every) and prints
// its --help text, which names the model's optimizer, loss, schedule, train
// inputs and parameters.
//
//===----------------------------------------------------------------------===//

#include "train_internal.h"

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>

namespace dist_rt {
namespace driver {
namespace train_impl {
namespace {

const char *scheduleName(uint32_t schedule) {
  switch (schedule) {
  case DIST_RT_LR_COSINE:
    return "cosine";
  case DIST_RT_LR_WARMUP_LINEAR:
    return "warmup-linear";
  default:
    return "constant";
  }
}

const char *roleName(uint8_t role) {
  switch (role) {
  case DIST_RT_PARAM_TRAINED:
    return "trained";
  case DIST_RT_PARAM_STATE:
    return "optimizer state";
  case DIST_RT_PARAM_PS:
    return "on the parameter server";
  default:
    return "frozen";
  }
}

} // namespace

void printTrainUsage(const char *program, const dist_rt_model_desc_t &desc) {
  const dist_rt_train_desc_t &train = *desc.train;
  bool dynamicBatch =
      train.num_inputs && train.inputs[0].dims[0] == DIST_RT_DYNAMIC_DIM;
  bool cuda = desc.device == DIST_RT_DEVICE_CUDA;
  std::printf(
      "usage: %s train --data NAME=FILE.npy [--data ...] [--batch-size B]\n"
      "       (--steps S | --epochs E) [--shuffle] [--seed S] [--threads N]\n"
      "%s"
      "       [--log FILE] [--save-params DIR] [--export-onnx FILE]\n"
      "       [--checkpoint-dir DIR --checkpoint-every K --snapshot-every K]\n"
      "       [--resume DIR]\n"
      "       [--params PATH] [--ps-servers ADDR,...] [--ps-mode MODE]\n"
      "       [--ps-timeout S] [--ps-prefetch] [--worker-memory MB] [--quiet]\n"
      "       [--help]\n"
      "\n"
      "Trains the compiled model '%s' (optimizer %s, loss %s, learning rate\n"
      "%g, %s schedule, %" PRId64 " warm-up steps) on samples read from .npy\n"
      "files: one per train input, all with the same number of samples along\n"
      "the first dimension. An epoch is floor(samples / B) steps; the samples\n"
      "left over at its end are not used.\n"
      "\n"
      "options:\n"
      "  --data NAME=FILE       read train input NAME from FILE (required, "
      "once per train input)\n"
      "  --batch-size B         samples per step (%s)\n"
      "  --steps S              train S steps in all, a resumed run's "
      "included (this or --epochs is required)\n"
      "  --epochs E             train E passes over the samples (this or "
      "--steps is required)\n"
      "  --shuffle              visit samples in a new random order each "
      "epoch (default: file order)\n"
      "  --seed S               seed of the --shuffle order, the same seed "
      "giving the same order (default: 0)\n"
      "  --threads N            number of threads (default: 0, one per "
      "core)\n"
      "%s"
      "  --log FILE             write each step's loss, learning rate and "
      "samples/s to FILE as JSON lines, appended to on --resume (default: no "
      "log)\n"
      "  --trace FILE           write the timeline of every step (and of each "
      "pipeline stage's actions) as a Chrome trace; on several ranks, rank r "
      "writes FILE with .rank<r> before its extension (default: none)\n"
      "  --save-params DIR      write the trained parameters to DIR as .npy "
      "files when done, for --params of inference (default: not saved)\n"
      "  --export-onnx FILE     write the ONNX model with the trained "
      "parameters to FILE when done (default: not written)\n"
      "  --checkpoint-dir DIR   save checkpoints in DIR, keeping the two "
      "newest and the newest flushed one, for --resume and for --params of "
      "inference (default: none)\n"
      "  --checkpoint-every K   save a checkpoint every K steps and after the "
      "last, each flushed to storage before it counts, so that it survives "
      "a crash of the machine\n"
      "  --snapshot-every K     save a checkpoint every K steps and after the "
      "last without waiting for storage (the last is flushed): cheap to take "
      "often, and it survives the death of any process of the job but not "
      "a crash of the machine, after which --resume takes the newest "
      "checkpoint whose files are whole (one of --checkpoint-every and "
      "--snapshot-every, or both, with --checkpoint-dir)\n"
      "  --resume DIR           continue from the newest checkpoint in DIR "
      "(an older one where the newest's files are not whole), or from DIR "
      "itself when it is one checkpoint (default: start at step 0)\n"
      "  --params PATH          parameters to start from: a parameter file, "
      "or a directory as for inference (default: %s)\n"
      "  --ps-servers ADDR,...  the parameter servers of the model's tables, "
      "in shard order (tcp://HOST:PORT, or @FILE for the address a server "
      "wrote with ps-server --address-file); default: the ps-server ranks "
      "of the job (mpirun -np S %s ps-server : -np W %s train ...), else a "
      "server in this process\n"
      "  --ps-mode MODE         sync (every step sees every earlier push: "
      "the result of one process), async, or ssp:K (no worker more than K "
      "steps ahead of the slowest) (default: sync)\n"
      "  --ps-timeout S         seconds a server may take to answer before "
      "the run fails naming it (default: 60)\n"
      "  --ps-prefetch          pull the next step's rows while a step "
      "computes (needs servers in --ps-mode async or ssp:K with K >= 1: a "
      "step's rows may then miss this worker's previous push; pays off when "
      "the servers run on other machines, not when they share this one's "
      "cores)\n"
      "  --worker-memory MB     refuse to start when this worker's parameters "
      "and optimizer state (tables on the parameter server excluded) exceed "
      "MB MiB, and report its peak memory against it at the end (default: "
      "no budget)\n"
      "  --quiet                print a progress line every tenth of the run "
      "instead of a progress bar (default: a bar on a terminal)\n"
      "  --help                 print this text and exit\n",
      program, cuda ? "       [--device N]\n" : "", desc.name,
      train.optimizer ? train.optimizer : "?", train.loss ? train.loss : "?",
      train.lr, scheduleName(train.lr_schedule), train.warmup_steps,
      dynamicBatch ? "required: the model's batch size is dynamic"
                   : "default: the batch size the model fixed",
      cuda ? "  --device N             the GPU to train on (default: "
             "$DIST_RT_DEVICE, else 0)\n"
           : "",
      defaultParamsText(desc).c_str(), program, program);
  std::printf("\ntrain inputs:\n");
  for (uint32_t i = 0; i < train.num_inputs; ++i) {
    const dist_rt_tensor_desc_t &input = train.inputs[i];
    std::printf("  %s: %s %s\n", input.name, dist_rt_dtype_name(input.dtype),
                formatShape(input.rank, input.dims).c_str());
  }
  std::printf("parameters:\n");
  for (uint32_t i = 0; desc.params && i < desc.num_params; ++i) {
    const dist_rt_tensor_desc_t &param = desc.params[i];
    std::printf("  %s: %s %s, %s\n", param.name ? param.name : "?",
                dist_rt_dtype_name(param.dtype),
                formatShape(param.rank, param.dims).c_str(),
                train.param_roles ? roleName(train.param_roles[i]) : "?");
  }
}

bool parseTrainCommandLine(int argc, char **argv,
                           const dist_rt_model_desc_t &desc,
                           TrainCommandLine &cl, std::string &error) {
  const dist_rt_train_desc_t &train = *desc.train;
  cl.dataFiles.assign(train.num_inputs, std::string());
  FileBinding data = {"--data", "train input", train.num_inputs, train.inputs,
                      desc.ps};
  auto positive = [](const std::string &flag, const std::string &value,
                     int64_t &out, std::string &error) {
    if (parseInteger(value, 1, INT64_MAX, out))
      return true;
    error = flag + " expects a positive integer, got '" + value + "'";
    return false;
  };
  auto path = [](const std::string &flag, const std::string &value,
                 std::string &out, std::string &error) {
    out = value;
    if (!value.empty())
      return true;
    error = flag + ": the path is empty";
    return false;
  };
  auto handle = [&](const std::string &flag, const std::string &value,
                    std::string &error) {
    if (flag == "--help")
      cl.help = true;
    else if (flag == "--shuffle")
      cl.shuffle = true;
    else if (flag == "--quiet")
      cl.quiet = true;
    else if (flag == "--ps-prefetch")
      cl.psPrefetch = true;
    else if (flag == "--data")
      return bindFile(value, desc.name, data, cl.dataFiles, error);
    else if (flag == "--batch-size")
      return positive(flag, value, cl.batchSize, error);
    else if (flag == "--steps")
      return positive(flag, value, cl.steps, error);
    else if (flag == "--epochs")
      return positive(flag, value, cl.epochs, error);
    else if (flag == "--checkpoint-every")
      return positive(flag, value, cl.checkpointEvery, error);
    else if (flag == "--snapshot-every")
      return positive(flag, value, cl.snapshotEvery, error);
    else if (flag == "--threads")
      return parseThreads(value, cl.threads, error);
    else if (flag == "--device")
      return parseDevice(desc, value, cl.device, error);
    else if (flag == "--log")
      return path(flag, value, cl.logPath, error);
    else if (flag == "--trace")
      return path(flag, value, cl.tracePath, error);
    else if (flag == "--save-params")
      return path(flag, value, cl.saveParamsDir, error);
    else if (flag == "--export-onnx")
      return path(flag, value, cl.exportOnnxPath, error);
    else if (flag == "--checkpoint-dir")
      return path(flag, value, cl.checkpointDir, error);
    else if (flag == "--resume")
      return path(flag, value, cl.resumeDir, error);
    else if (flag == "--params")
      return path(flag, value, cl.paramPath, error);
    else if (flag == "--ps-servers") {
      for (size_t at = 0; at <= value.size();) {
        size_t comma = value.find(',', at);
        if (comma == std::string::npos)
          comma = value.size();
        if (comma == at) {
          error = "--ps-servers: an address is empty in '" + value + "'";
          return false;
        }
        cl.psServers.push_back(value.substr(at, comma - at));
        at = comma + 1;
      }
    } else if (flag == "--ps-mode")
      return parsePsMode(value, cl.psMode, cl.psStaleness, error);
    else if (flag == "--worker-memory")
      return positive(flag, value, cl.workerMemoryMb, error);
    else if (flag == "--ps-timeout") {
      char *end = nullptr;
      cl.psTimeout = std::strtod(value.c_str(), &end);
      if (value.empty() || *end || !(cl.psTimeout > 0) || cl.psTimeout > 1e6) {
        error = "--ps-timeout expects a positive number of seconds, got '" +
                value + "'";
        return false;
      }
    } else if (!parseInteger(value, 0, INT64_MAX, cl.seed)) {
      error = "--seed expects a non-negative integer, got '" + value + "'";
      return false;
    }
    return true;
  };
  if (!parseOptions(argc, argv, 2,
                    {{"--help", false},
                     {"--shuffle", false},
                     {"--quiet", false},
                     {"--data", true},
                     {"--ps-prefetch", false},
                     {"--batch-size", true},
                     {"--steps", true},
                     {"--epochs", true},
                     {"--checkpoint-every", true},
                     {"--snapshot-every", true},
                     {"--threads", true},
                     {"--device", true},
                     {"--log", true},
                     {"--trace", true},
                     {"--save-params", true},
                     {"--export-onnx", true},
                     {"--checkpoint-dir", true},
                     {"--resume", true},
                     {"--params", true},
                     {"--ps-servers", true},
                     {"--ps-mode", true},
                     {"--ps-timeout", true},
                     {"--worker-memory", true},
                     {"--seed", true}},
                    "train inputs are given as --data NAME=FILE", handle,
                    error))
    return false;
  if (cl.help)
    return true;
  error = missingFile(data, cl.dataFiles);
  if (!error.empty())
    return false;
  if ((cl.steps != 0) == (cl.epochs != 0)) {
    error = cl.steps ? "--steps and --epochs cannot both be given"
                     : "the length of the run is missing: give --steps S or "
                       "--epochs E";
    return false;
  }
  if (!desc.ps && (!cl.psServers.empty() || cl.psMode != 0 || cl.psPrefetch)) {
    error = std::string("--ps-servers, --ps-mode and --ps-prefetch need "
                        "tables on the parameter server: model '") +
            desc.name + "' has none (dist-opt --ps-tables)";
    return false;
  }
  if (cl.psPrefetch && cl.psServers.empty() &&
      (cl.psMode == DIST_RT_PS_SYNC ||
       (cl.psMode == DIST_RT_PS_SSP && cl.psStaleness == 0))) {
    error = "--ps-prefetch needs --ps-mode async or ssp:K with K >= 1 (under "
            "sync a step's pull waits for the previous step's push)";
    return false;
  }
  if (!cl.checkpointDir.empty() && !cl.checkpointEvery && !cl.snapshotEvery) {
    error = "--checkpoint-dir needs --checkpoint-every K, --snapshot-every K "
            "or both";
    return false;
  }
  if (cl.checkpointDir.empty() && (cl.checkpointEvery || cl.snapshotEvery)) {
    error = std::string(cl.checkpointEvery ? "--checkpoint-every"
                                           : "--snapshot-every") +
            " needs --checkpoint-dir";
    return false;
  }
  return true;
}

} // namespace train_impl
} // namespace driver
} // namespace dist_rt
