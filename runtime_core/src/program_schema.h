// The ET12 program's layout as runtime_core reads it (docs/schema/program.fbs): table slots, value and
// instruction tags, and the value kinds this firmware reads. Private to runtime_core/src (the loader,
// the executor, the value decoding and KernelContext); kernels see values through mcu/kernel.h.
#pragma once
#include <stdint.h>

#include "mcu/program.h"

namespace mcu {

// Slot numbers from docs/schema/program.fbs.
enum ProgramSlot { kProgVersion = 0, kProgPlans = 1, kProgConstBuffers = 2, kProgSegments = 4, kProgConstSegment = 5,
                   kProgMutableData = 6 };
enum PlanSlot { kPlanName = 0, kPlanValues = 2, kPlanInputs = 3, kPlanOutputs = 4, kPlanChains = 5, kPlanOperators = 6,
                kPlanDelegates = 7, kPlanBufferSizes = 8 };
enum TensorSlot { kTensorType = 0, kTensorSizes = 2, kTensorDimOrder = 3, kTensorConst = 5, kTensorAlloc = 6,
                  kTensorExtraInfo = 9 };
// ExtraTensorInfo: the fully qualified name (the key of external data) and where the data lies.
enum ExtraInfoSlot { kExtraName = 1, kExtraLocation = 2 };
constexpr int8_t kLocationExternal = 1;  // TensorDataLocation.EXTERNAL
enum ValueTag : uint8_t { kNone = 0, kNull = 1, kInt = 2, kBool = 3, kDouble = 4, kTensor = 5, kString = 6,
                          kIntList = 7, kDoubleList = 8, kBoolList = 9, kTensorList = 10, kOptTensorList = 11 };
// The value kinds this firmware reads (MCU_VALUE_KINDS, program.h): a value of any other kind is
// rejected at load; the verifier's code for the others is compiled out (None and Null are always read).
constexpr uint32_t kValueKinds = MCU_VALUE_KINDS | 1u << kNone | 1u << kNull;
constexpr bool has_kind(uint32_t tag) { return ((kValueKinds >> tag) & 1u) != 0; }
constexpr bool has_value_lists() {
  return has_kind(kIntList) || has_kind(kTensorList) || has_kind(kOptTensorList);
}
constexpr uint8_t kKernelCall = 1;
#if MCU_MAX_DELEGATES > 0
constexpr uint8_t kDelegateCall = 2;
constexpr int8_t kLocationSegment = 1;  // DataLocation.SEGMENT
#endif

// dtype_size (mcu/types.h) reads nothing but its argument: callers may fold repeated calls.
[[gnu::const]] size_t dtype_size(DType t);

}  // namespace mcu
