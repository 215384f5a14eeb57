//===- model_internal.h - Internals of the model API ------------*- C++ -*-===//
// SPDX-License-Identifier: Apache-2.0
//
// What the sources of dist_rt_model_* share: the loaded model (struct
// dist_rt_model, the opaque handle of dist_rt/model.h), the argument
// buffers of one entry function (EntryCall), and the functions that each
// source provides to the others: descriptor checks (model_desc.cpp),
// parameter loading (model_params.cpp), the marshalling of calls and
// inference runs (model_call.cpp) and training steps (model_train.cpp).
// model.cpp creates models and holds the C API. Internal to the runtime
// library (hidden visibility); not installed.
//
//===----------------------------------------------------------------------===//

#ifndef DIST_RT_LIB_MODEL_INTERNAL_H
#define DIST_RT_LIB_MODEL_INTERNAL_H

#include "cuda_internal.h"
#include "internal.h"

#include "dist_rt/kernels.h"
#include "dist_rt/model.h"
#include "dist_rt/npy.h"
#include "dist_rt/ps.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace dist_rt {
namespace model_impl {

//===----------------------------------------------------------------------===//
// Entry calls
//===----------------------------------------------------------------------===//

/// One output descriptor as returned by the entry function.
struct ReturnedOutput {
  char *allocated;
  char *aligned;
  int64_t offset;
  const int64_t *sizes;
  const int64_t *strides;
  /// `allocated` is a live allocator block that the entry function created
  /// (not an input's buffer), so the runtime must free or keep it.
  bool fresh;
};

/// One bar of a --trace timeline: an action of a pipeline stage (or a whole
/// step), from `startUs` (since the run's start) for `durUs`, of which
/// `waitUs` waiting for another stage's data.
struct TraceEvent {
  const char *name = "";
  int32_t stage = -1, microBatch = -1;
  int64_t step = 0;
  double startUs = 0, durUs = 0, waitUs = 0;
  /// A pipelined step: the most bytes kept between actions at once.
  int64_t heldBytes = 0;
};

/// The signature and argument buffers of one entry function: inference, or
/// the training step. The parameter descriptors are shared by both and live
/// in the model.
struct EntryCall {
  /// What the inputs are called in messages: "input" or "train input".
  const char *inputKind = "input";
  uint32_t numInputs = 0;
  const dist_rt_tensor_desc_t *inputs = nullptr;
  uint32_t numOutputs = 0;
  const dist_rt_tensor_desc_t *outputs = nullptr;
  /// Descriptors of the inputs, then of any scalar arguments, back to back.
  std::vector<int64_t> argWords;
  /// Start of each input's (then scalar's) descriptor in argWords.
  std::vector<size_t> argOffsets;
  /// Buffer the entry function writes the output descriptors into.
  std::vector<int64_t> resultWords;
  /// Start of each output's descriptor in resultWords.
  std::vector<size_t> resultOffsets;
  /// The pointer array passed to the entry function: parameters, inputs,
  /// scalars, then resultWords.
  std::vector<void *> args;
  /// A dimension that must have the size of an earlier one the model names
  /// alike (dist_rt_tensor_desc_t::dim_names): input, dim, earlier input,
  /// earlier dim. Found once, when the call is laid out.
  struct SameDim {
    uint32_t input, dim, firstInput, firstDim;
  };
  std::vector<SameDim> sameDims;
};

} // namespace model_impl
} // namespace dist_rt

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

/// A loaded model. See dist_rt/model.h.
struct dist_rt_model {
  const dist_rt_model_desc_t *desc = nullptr;
  /// The mapped parameter file; NULL for a model with a training step once
  /// its parameters are copied, and for parameters read from a directory.
  dist_rt_params_t params = nullptr;
  /// Descriptors of the parameters, back to back; they point into the
  /// mapping, or into ownedParams for a model with a training step.
  std::vector<int64_t> paramWords;
  /// Start of each parameter's descriptor in paramWords.
  std::vector<size_t> paramOffsets;
  /// Private, writable, 64-byte-aligned copies of every parameter (training
  /// models, split parameters and parameters read from a directory). Not
  /// allocator blocks, so an output aliasing one is never taken for a fresh
  /// block.
  std::vector<std::unique_ptr<void, dist_rt::FreeDeleter>> ownedParams;
  /// The copies among ownedParams registered as constant memory (read from
  /// a parameter directory for an inference-only model, which never writes
  /// them): unregistered before they are freed.
  std::vector<const void *> constantParams;

  dist_rt::model_impl::EntryCall inference;
  dist_rt::model_impl::EntryCall training;

  /// Inference split over the dp axis (desc->infer_batch_split): then
  /// `inference` takes the rows of one dp rank (its descriptors are
  /// sliceInputs / sliceOutputs) and wholeInference, never called, checks
  /// the whole inputs against the declared signature.
  dist_rt::model_impl::EntryCall wholeInference;
  int64_t dpAxis = -1;
  /// The dp size the model was compiled for.
  int64_t splitDp = 1;
  std::vector<dist_rt_tensor_desc_t> sliceInputs, sliceOutputs;
  std::vector<int64_t> sliceDims;
  /// Scratch of a split run: the tensors of one slice and their dims, and
  /// the bytes exchanged by the gather.
  std::vector<dist_rt_tensor_t> sliceTensors;
  std::vector<int64_t> sliceTensorDims;
  std::vector<char> gatherSend, gatherRecv;
  /// A training step cut into pipeline stages (desc->train->pipeline): the
  /// functions this process runs (its stage's, or every stage's when it
  /// runs alone: pipelineStage -1) and their calls, in the same order.
  std::vector<const dist_rt_pipeline_fn_t *> pipelineFns;
  std::vector<dist_rt::model_impl::EntryCall> pipelineCalls;
  int32_t pipelineStage = -1;
  /// Most bytes the last pipelined step kept between actions at once.
  int64_t pipelineHeldBytes = 0;
  /// Pipelined steps this process has run; the seconds of its compute
  /// actions in the steps being timed (ZB-H1 on several ranks), by action
  /// code; and this rank's compute actions in order (action code,
  /// micro-batch), set at its first step and again, for ZB-H1, from the
  /// timed steps.
  int64_t pipelineSteps = 0;
  std::vector<double> pipelineActionSamples[4];
  std::vector<std::pair<uint32_t, int32_t>> pipelineOrder;
  /// Where the pipeline's actions are recorded (--trace), or null.
  std::vector<dist_rt::model_impl::TraceEvent> *trace = nullptr;
  std::chrono::steady_clock::time_point traceEpoch;
  /// Tables on the parameter server (desc->ps, model_ps.cpp).
  struct PsState {
    /// The client steps pull and push through (borrowed; see
    /// dist_rt_model_attach_ps), or null; the factor applied to pushed
    /// gradients (1 / the dp ranks, whose losses are means of a slice).
    dist_rt_ps_client_t client = nullptr;
    float gradScale = 1;
    /// The parameters that are tables, in the order of their first lookup:
    /// the servers' table indices.
    std::vector<uint32_t> tableParams;
    /// Per lookup: its table's index, and the indices of its rows and ids
    /// among the inputs of inference and of the step, and of the rows'
    /// gradient among the step's outputs (-1: none).
    struct Lookup {
      uint32_t table = 0;
      int32_t inferRows = -1, inferIds = -1;
      int32_t trainRows = -1, trainIds = -1, trainGrad = -1;
    };
    std::vector<Lookup> lookups;
    /// The rows of one batch: per table, the ids of its lookups back to
    /// back and their rows; per lookup, where its ids start and how many.
    struct Batch {
      std::vector<std::vector<int64_t>> ids;
      std::vector<std::vector<float>> rows;
      std::vector<size_t> offset, count;
    };
    /// This step's batch, and the gradients to push.
    Batch batch;
    std::vector<std::vector<float>> grads;
    /// The next step's batch (dist_rt_model_ps_prefetch): its ids are
    /// known (`nextIds`); `nextStep` is the 0-based step its rows were
    /// pulled for by `prefetcher` while this step computes (-1: none).
    Batch next;
    bool nextIds = false;
    int64_t nextStep = -1;
    std::thread prefetcher;
    dist_rt_status_t prefetchStatus = nullptr;
    /// The inputs with the rows filled in, and their dims.
    std::vector<dist_rt_tensor_t> inputs;
    std::vector<int64_t> dims;
  };
  PsState ps;
  /// The learning rate and step number of the training step in progress,
  /// behind the two rank-0 descriptors of training.argWords.
  float trainScalars[2] = {0, 0};

  /// The outputs of one run: tensors, their dims (back to back) and the
  /// allocator blocks they own.
  struct Outputs {
    std::vector<dist_rt_tensor_t> tensors;
    std::vector<int64_t> dims;
    /// The blocks the tensors' data lie in: the runtime's host allocator's,
    /// or the device allocator's when `device` (a CUDA model's device
    /// tensors).
    std::vector<void *> blocks;
    bool device = false;

    void release() {
      for (void *block : blocks)
        if (device)
          dist_rt::cuda::release(block);
        else
          _mlir_memref_to_llvm_free(block);
      blocks.clear();
      tensors.clear();
      device = false;
    }
  };
  /// Returned by the last successful run.
  Outputs current;
  /// Being built by the run in progress; kept to reuse its capacity.
  Outputs pending;
  /// The whole outputs a split run assembles from its slices.
  Outputs assembled;
  /// Scratch for one call: allocator blocks returned by the entry function.
  std::vector<void *> returnedBlocks;
  /// Scratch for one call: the output descriptors as returned.
  std::vector<dist_rt::model_impl::ReturnedOutput> returned;
  /// Scratch for one run: contiguous strides of an output.
  std::vector<int64_t> contiguousStrides;

  /// A CUDA model (desc->device): the parameters' descriptors pointing to
  /// their device copies (the calls' arguments), those copies, and the
  /// device copies of a run's inputs.
  std::vector<int64_t> deviceParamWords;
  std::vector<void *> deviceParams;
  std::vector<void *> deviceInputs;
  /// A CUDA model with a training step: the device block holding the
  /// step's two scalars (trainScalars), which the training call's scalar
  /// descriptors point at.
  float *deviceScalars = nullptr;
  /// options.device_tensors: outputs stay in device memory.
  bool deviceTensors = false;

  ~dist_rt_model();
};

namespace dist_rt {
namespace model_impl {

//===----------------------------------------------------------------------===//
// Descriptor checks (model_desc.cpp)
//===----------------------------------------------------------------------===//

/// Checks the descriptor before anything else looks at it.
dist_rt_status_t checkDesc(const dist_rt_model_desc_t &desc);

/// The index of the mesh axis named "dp", or -1.
int64_t dpAxisOf(const dist_rt_model_desc_t &desc);
/// The index of the mesh axis named `name`, or -1.
int64_t meshAxisOf(const dist_rt_model_desc_t &desc, const char *name);

/// Fails when the job runs alone (one rank) and a parameter the run needs
/// is split over a mesh axis of more than one rank: its other parts live
/// on ranks that do not exist. Inference needs every parameter but the
/// optimizer state; training needs all of them.
dist_rt_status_t checkSplitsRunAlone(const dist_rt_model_desc_t &desc,
                                     bool training);

//===----------------------------------------------------------------------===//
// Parameters (model_params.cpp)
//===----------------------------------------------------------------------===//

/// Returns the role of parameter `index`; every parameter of an
/// inference-only model is read from the file like a frozen one.
inline uint8_t paramRole(const dist_rt_model_desc_t &desc, uint32_t index) {
  return desc.train ? desc.train->param_roles[index]
                    : uint8_t{DIST_RT_PARAM_FROZEN};
}

/// Maps the parameter file (or reads the files of a parameter directory,
/// see dist_rt_model_options_t::param_path) and checks every declared
/// parameter against it; fills the parameter descriptors. A model with a
/// training step gets private copies of its parameters (zeros for optimizer
/// state, which is not in the file) and lets go of the mapping.
dist_rt_status_t loadParams(dist_rt_model &model,
                            const dist_rt_model_options_t &options);

/// Fills `out` from the descriptor of parameter `index`.
void describeParam(const dist_rt_model &model, size_t index,
                   dist_rt_tensor_t &out);

//===----------------------------------------------------------------------===//
// Parameter-server tables (model_ps.cpp)
//===----------------------------------------------------------------------===//

/// The initial rows of a model's tables on the parameter server, read as
/// the parameters are (see dist_rt_model_options_t::param_path: the
/// parameter file, mapped, or the .npy files of a directory): per table of
/// dist_rt::psTables, rows x dim floats, valid while this object lives.
/// NULL for a table the servers draw from a distribution (desc.ps->init)
/// that `paramPath` does not hold (or without a `paramPath`): see
/// useInitRows. A checkpoint's tables come with their optimizer state.
struct PsInitRows {
  std::vector<const float *> rows;
  /// Per table, its optimizer state and count of applied updates when the
  /// directory read holds them (a checkpoint); NULL and 0 otherwise.
  std::vector<const float *> state;
  std::vector<int64_t> updates;
  dist_rt_status_t load(const dist_rt_model_desc_t &desc,
                        const char *paramPath);
  PsInitRows() = default;
  PsInitRows(const PsInitRows &) = delete;
  PsInitRows &operator=(const PsInitRows &) = delete;
  ~PsInitRows();
  /// Makes `tables` (of dist_rt::psTables) start from the rows read.
  void useInitRows(std::vector<dist_rt_ps_table_t> &tables) const;

private:
  /// Holds the mapping of the parameter file.
  std::unique_ptr<dist_rt_model> holder;
  std::vector<dist_rt_npy_array_t> arrays;
};

/// Resolves the lookups of desc->ps to input and output indices.
dist_rt_status_t setUpPs(dist_rt_model &model);

/// Before a run (`training` false) or a training step of 0-based number
/// `step`: the ids of every lookup from `inputs`, checked against their
/// table, and the rows for them (pulled through the attached client as of
/// `step`; read from it for a run; gathered from the table's parameter by
/// a run without a client). Points `inputs` at model.ps.inputs, a copy
/// with the rows filled in.
dist_rt_status_t psFillRows(dist_rt_model &model, bool training, int64_t step,
                            const dist_rt_tensor_t *&inputs, size_t numInputs);

/// After a training step (outputs in model.returned): pushes the rows'
/// gradients, every table once, as of `step`.
dist_rt_status_t psPushGrads(dist_rt_model &model, int64_t step);

/// Waits for the pull of the next step's rows started by psFillRows (a
/// no-op without one); before anything else uses the client.
void psJoinPrefetch(dist_rt_model &model);

/// Collects into `b` the ids of every lookup in `inputs` (of inference or
/// of the training step), checked against their tables. Sets `usable` to
/// false, without an error, when the inputs are not what the model
/// declares: bindInputs names what is wrong.
dist_rt_status_t collectIds(const dist_rt_model &model, bool training,
                            const dist_rt_tensor_t *inputs, size_t numInputs,
                            dist_rt_model::PsState::Batch &b, bool &usable);

/// Reads rows [first, first + count) of the table of parameter `param` from
/// the servers into `out` (count x dim floats).
dist_rt_status_t psReadRows(dist_rt_model &model, uint32_t param, int64_t first,
                            int64_t count, float *out);

/// Reads the optimizer state of rows [first, first + count) of the table
/// of parameter `param` (count x dist_rt_ps_state_floats floats) and the
/// table's count of applied updates; `width` gets the floats per row.
dist_rt_status_t psReadState(dist_rt_model &model, uint32_t param,
                             int64_t first, int64_t count, float *out,
                             int64_t &updates);
/// Floats of optimizer state per row of the table of parameter `param`
/// (0 when it has none or is not a table).
size_t psStateFloats(const dist_rt_model_desc_t &desc, uint32_t param);
/// The file name, within a checkpoint, of the optimizer state of table
/// `name` (rows x state floats), and of its count of applied updates.
std::string psStateFileName(const char *name);
std::string psUpdatesFileName(const char *name);

//===----------------------------------------------------------------------===//
// Memref descriptors and calls (model_call.cpp)
//===----------------------------------------------------------------------===//

/// Number of 64-bit words of a ranked memref descriptor.
size_t descriptorWords(uint32_t rank);

/// Writes a descriptor for a contiguous row-major array at `data`.
void writeDescriptor(int64_t *words, const void *data, uint32_t rank,
                     const int64_t *dims);

/// Product of `dims` times `elemSize`; false on overflow.
bool byteSize(uint32_t rank, const int64_t *dims, size_t elemSize,
              uint64_t &out);

/// Lays out the buffers of `call`, whose signature is set, for its inputs
/// followed by `numScalars` rank-0 arguments.
void layOutCall(dist_rt_model &model, EntryCall &call, size_t numScalars);

/// Checks the inputs of a call and writes their descriptors.
dist_rt_status_t bindInputs(const dist_rt_model &model, EntryCall &call,
                            const dist_rt_tensor_t *inputs, size_t numInputs);

/// Frees every distinct block in `blocks` that is not in `keep`, and clears
/// `blocks`.
void freeBlocks(std::vector<void *> &blocks, const std::vector<void *> &keep);

/// Reads the output descriptors that the entry function of `call` returned
/// into model.returned, the fresh blocks among them into
/// model.returnedBlocks, and checks them against the declared shapes. On
/// failure every fresh block is freed.
dist_rt_status_t receiveOutputs(dist_rt_model &model, const EntryCall &call,
                                const dist_rt_tensor_t *inputs);

/// The status of a run whose generated code reported an error (an index
/// out of range): the data given to the model is invalid. A training step
/// (`step` > 0) is named, its batch being the culprit.
dist_rt_status_t generatedCodeError(const dist_rt_model_desc_t &desc,
                                    dist_rt::RunErrors &errors,
                                    int64_t step = 0);

/// Runs the inference entry on `inputs` (dist_rt_model_run): whole, or
/// split over the dp axis (desc->infer_batch_split).
//===----------------------------------------------------------------------===//
// CUDA models (model_cuda.cpp)
//===----------------------------------------------------------------------===//

/// Opens the GPU of a CUDA model (options.device) and uploads its loaded
/// parameters; the inference call then passes the device copies. With a
/// training step the device copies (managed memory) replace the host ones
/// as the live parameters, and the step's scalars get a device block.
dist_rt_status_t openDevice(dist_rt_model &model,
                            const dist_rt_model_options_t &options);

/// Copies the inputs bindInputs bound to `call` to device memory and points
/// the call's descriptors at the copies.
dist_rt_status_t uploadInputs(dist_rt_model &model, EntryCall &call);

/// Runs the training step of a CUDA model (`call`, its inputs bound and
/// checked, model.trainScalars set): copies the inputs and the two scalars
/// to the device, calls the step, waits for the device and reads the loss
/// back into `*out_loss`. Frees the step's device blocks either way; a
/// failure is one status naming the step.
dist_rt_status_t runTrainStepOnDevice(dist_rt_model &model, EntryCall &call,
                                      int64_t step, float *out_loss);

/// Replaces the output descriptors the entry returned (device memory) by
/// host copies from the runtime's allocator, then frees the device blocks
/// of the run (outputs and input copies). On failure frees everything.
dist_rt_status_t downloadOutputs(dist_rt_model &model, EntryCall &call);

/// For device tensors (options.device_tensors): copies each output the
/// entry returned into a device block of its own (on the device) and makes
/// model.pending those outputs, then frees the run's device blocks. On
/// failure frees everything.
dist_rt_status_t keepOutputsOnDevice(dist_rt_model &model, EntryCall &call);

/// Frees the device blocks of a run that failed (outputs and input
/// copies) without copying anything back.
void discardOutputs(dist_rt_model &model, EntryCall &call);

/// Frees a CUDA model's device copies (parameters, inputs).
void releaseDeviceBlocks(dist_rt_model &model);

dist_rt_status_t runModel(dist_rt_model &model, const dist_rt_tensor_t *inputs,
                          size_t numInputs,
                          const dist_rt_tensor_t **out_outputs);

//===----------------------------------------------------------------------===//
// Training steps (model_train.cpp)
//===----------------------------------------------------------------------===//

/// Runs one training step (dist_rt_model_train_step).
dist_rt_status_t trainStep(dist_rt_model &model, const dist_rt_tensor_t *inputs,
                           size_t numInputs, float lr, int64_t step,
                           float *out_loss);

//===----------------------------------------------------------------------===//
// Pipeline stages (model_pipeline.cpp)
//===----------------------------------------------------------------------===//

/// Finds this process's stage (its coordinate on mesh axis "pp", or every
/// stage when it runs alone) and lays out the calls of its functions.
dist_rt_status_t setUpPipeline(dist_rt_model &model);

/// Runs one training step of a pipelined model on checked inputs.
dist_rt_status_t pipelineStep(dist_rt_model &model,
                              const dist_rt_tensor_t *inputs, size_t numInputs,
                              float lr, int64_t step, float *out_loss);

/// Gives every rank the current value of each parameter from the stage
/// that updates it (before checkpoints and saves). Collective over the
/// pipeline axis; nothing to do for a process that runs every stage.
dist_rt_status_t syncPipelineParams(dist_rt_model &model);

} // namespace model_impl
} // namespace dist_rt

namespace dist_rt {

/// The tables of desc->ps as servers and clients declare them (in the order
/// of their first lookup, with the model's optimizer, rows created from the
/// model's parameters: DIST_RT_PS_INIT_ROWS, whose `init_rows` a server
/// sets), and the parameter index of each.
void psTables(const dist_rt_model_desc_t &desc, std::vector<uint32_t> &params,
              std::vector<dist_rt_ps_table_t> &tables);

/// The fingerprint of a model's tables that servers and workers compare
/// (dist_rt_ps_*_options_t::model_id).
uint64_t psModelId(const dist_rt_model_desc_t &desc);

} // namespace dist_rt

#endif // DIST_RT_LIB_MODEL_INTERNAL_H
