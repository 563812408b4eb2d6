//===- Opcode.h - PTX opcodes and their modifiers, decoded ------*- C++ -*-===//
//
// The decoding of an instruction's opcode and the check of its operands
// (Opcode.cpp), used by the parser. Internal to runtime/emulator.
//
//===----------------------------------------------------------------------===//
#ifndef TG_RUNTIME_EMULATOR_OPCODE_H
#define TG_RUNTIME_EMULATOR_OPCODE_H

#include "runtime/emulator/Ptx.h"

#include <string>
#include <string_view>

namespace tgrt::emu::detail {

/// The type named by modifier `m` without its dot ("b32", "bf16x2"), or
/// Ty::None.
Ty parseType(std::string_view m);

/// The bytes of one value of type `t` (0 for Ty::None).
uint32_t typeBytes(Ty t);

/// Decodes `opcode` (e.g. "setp.ltu.and.f32") into `in`'s op, type,
/// state space, rounding and other fields: "" or what is not supported.
std::string decodeOpcode(std::string_view opcode, Inst &in);

/// True when `in`'s operands have a shape its op allows (kinds, counts,
/// vector lengths).
bool shapeMatches(const Inst &in);

} // namespace tgrt::emu::detail

#endif // TG_RUNTIME_EMULATOR_OPCODE_H
