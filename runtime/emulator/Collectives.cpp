//===- Collectives.cpp - CTA barriers and warp collectives ----------------===//
//
// What the scheduler completes once every participant has arrived: CTA
// barriers (bar.sync/barrier.sync, with an optional thread count) and warp
// collectives over their member mask (shfl.sync, vote.sync, bar.warp.sync)
// or the whole warp (ldmatrix, mma.sync m16n8k16), the last two with the
// fragment layouts of the PTX ISA.
//
//===----------------------------------------------------------------------===//
#include "runtime/emulator/Cta.h"

namespace tgrt::emu::detail {

bool Cta::releaseBarriers() {
  bool any = false;
  for (uint32_t id = 0; id < 16; ++id) {
    uint32_t arrived = barArrived_[id];
    if (!arrived)
      continue;
    uint32_t count = 0;
    for (const Thread &t : threads_)
      if (t.st == St::Bar && t.barId == id) {
        count = t.barCount;
        break;
      }
    // Without a count the barrier waits for every thread that has not
    // exited (the PTX ISA's `exit`: exiting threads release a barrier they
    // alone hold up).
    if (count ? arrived < count : arrived < live_)
      continue;
    for (Thread &t : threads_)
      if (t.st == St::Bar && t.barId == id) {
        t.st = St::Ready;
        ++t.pc;
      }
    barArrived_[id] = 0;
    ++epoch_; // orders every shared access before it against every after
    any = true;
  }
  return any;
}

bool Cta::releaseWarps() {
  bool any = false;
  std::vector<Thread *> members;
  for (uint32_t base = 0; base < n_; base += 32) {
    uint32_t size = std::min<uint32_t>(32, n_ - base);
    for (uint32_t lane = 0; lane < size; ++lane) {
      Thread &t = threads_[base + lane];
      if (t.st != St::Warp)
        continue;
      uint32_t m = t.waitMask;
      if (!(m & (1u << lane)))
        fault(t, std::string(opName(k_.code[t.pc].op)) +
                     ": the member mask does not include the thread itself");
      members.clear();
      bool ready = true;
      for (uint32_t j = 0; j < 32 && ready; ++j) {
        if (!(m & (1u << j)))
          continue;
        if (j >= size)
          fault(t, std::string(opName(k_.code[t.pc].op)) +
                       ": member mask names lane " + std::to_string(j) +
                       ", which this CTA does not have");
        Thread &u = threads_[base + j];
        if (u.st == St::Done)
          fault(t, std::string(opName(k_.code[t.pc].op)) +
                       ": lane " + std::to_string(j) +
                       " of the member mask has exited");
        if (u.st != St::Warp) {
          ready = false;
          break;
        }
        if (u.waitMask != m)
          fault(t, std::string(opName(k_.code[t.pc].op)) +
                       ": lanes of one collective disagree on the member "
                       "mask");
        members.push_back(&u);
      }
      if (!ready)
        continue;
      warpCollective(members);
      if (raceCheck_)
        ++warpEpoch_[base / 32];
      if (vc_)
        joinClocks(members.data(), uint32_t(members.size()));
      for (Thread *u : members) {
        u->st = St::Ready;
        ++u->pc;
      }
      any = true;
    }
  }
  return any;
}

void Cta::warpCollective(const std::vector<Thread *> &members) {
  const Thread &first = *members[0];
  const Inst &in0 = k_.code[first.pc];
  for (Thread *u : members)
    if (k_.code[u->pc].op != in0.op ||
        ((in0.op == Op::Ldmatrix || in0.op == Op::Mma) && u->pc != first.pc))
      fault(*u, std::string("lanes of a warp meet at different collectives (") +
                    opName(k_.code[u->pc].op) + " and " + opName(in0.op) +
                    " at line " + std::to_string(in0.line) + ")");
  uint32_t lanes[32];
  uint64_t out[32][8];
  uint32_t n = uint32_t(members.size());
  for (uint32_t i = 0; i < n; ++i)
    lanes[i] = members[i]->linear % 32;
  Thread *lanePtr[32] = {};
  for (uint32_t i = 0; i < n; ++i)
    lanePtr[lanes[i]] = members[i];
  auto byLane = [&](uint32_t lane) { return lanePtr[lane & 31]; };
  switch (in0.op) {
  case Op::BarWarpSync:
    return;
  case Op::Elect: {
    // The lowest lane of the member mask is elected: every member gets its
    // lane number, and a predicate true in the elected lane alone.
    uint32_t leader = 32;
    for (uint32_t i = 0; i < n; ++i)
      leader = std::min(leader, lanes[i]);
    for (uint32_t i = 0; i < n; ++i) {
      Thread &t = *members[i];
      const Inst &in = k_.code[t.pc];
      uint64_t *R = regsOf(t);
      const Operand &d = in.ops[0];
      uint32_t r = d.kind == Operand::Vec ? in.vregs[d.reg] : d.reg;
      uint32_t p = d.kind == Operand::Vec ? in.vregs[d.reg + 1] : kNoReg;
      if (r != kNoReg)
        R[r] = leader;
      if (p != kNoReg)
        R[p] = lanes[i] == leader;
    }
    return;
  }
  case Op::Shfl: {
    for (uint32_t i = 0; i < n; ++i) {
      Thread &t = *members[i];
      const Inst &in = k_.code[t.pc];
      const uint64_t *R = regsOf(t);
      uint32_t lane = lanes[i];
      uint32_t b = uint32_t(val(in.ops[2], t, R));
      uint32_t c = uint32_t(val(in.ops[3], t, R));
      uint32_t segmask = (c >> 8) & 0x1f, clamp = c & 0x1f;
      int32_t maxLane = int32_t((lane & segmask) | (clamp & ~segmask));
      int32_t minLane = int32_t(lane & segmask);
      int32_t j;
      bool p;
      switch (in.mode) {
      case kShflUp:
        j = int32_t(lane) - int32_t(b & 0x1f);
        p = j >= maxLane;
        break;
      case kShflDown:
        j = int32_t(lane) + int32_t(b & 0x1f);
        p = j <= maxLane;
        break;
      case kShflBfly:
        j = int32_t(lane ^ (b & 0x1f));
        p = j <= maxLane;
        break;
      default:
        j = minLane | int32_t(b & 0x1f & ~segmask);
        p = j <= maxLane;
      }
      if (!p)
        j = int32_t(lane);
      Thread *src = byLane(uint32_t(j));
      if (!src)
        fault(t, "shfl.sync reads lane " + std::to_string(j) +
                     ", which is outside its member mask");
      out[i][0] = val(k_.code[src->pc].ops[1], *src, regsOf(*src)) &
                  0xffffffff;
      out[i][1] = p;
    }
    for (uint32_t i = 0; i < n; ++i) {
      Thread &t = *members[i];
      const Operand &d = k_.code[t.pc].ops[0];
      const Inst &in = k_.code[t.pc];
      uint64_t *R = regsOf(t);
      if (d.kind == Operand::Reg) {
        R[d.reg] = out[i][0];
      } else if (d.kind == Operand::Vec) {
        if (in.vregs[d.reg] != kNoReg)
          R[in.vregs[d.reg]] = out[i][0];
        if (in.vregs[d.reg + 1] != kNoReg)
          R[in.vregs[d.reg + 1]] = out[i][1];
      }
    }
    return;
  }
  case Op::Vote: {
    uint32_t ballot = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const Thread &t = *members[i];
      if (val(k_.code[t.pc].ops[1], t, regsOf(t)) & 1)
        ballot |= 1u << lanes[i];
    }
    uint32_t m = first.waitMask;
    for (uint32_t i = 0; i < n; ++i) {
      Thread &t = *members[i];
      const Inst &in = k_.code[t.pc];
      uint64_t r;
      switch (in.mode) {
      case kVoteAll: r = ballot == m; break;
      case kVoteAny: r = ballot != 0; break;
      case kVoteUni: r = ballot == 0 || ballot == m; break;
      default: r = ballot;
      }
      regsOf(t)[in.ops[0].reg] = r;
    }
    return;
  }
  case Op::Ldmatrix: {
    // Lanes 8k..8k+7 give the row addresses of matrix k (8 rows of eight
    // b16); lane i receives row i/4, columns 2(i%4) and 2(i%4)+1 of each
    // matrix (of its transpose with .trans).
    if (n != 32)
      fault(first, "ldmatrix needs all 32 lanes of the warp");
    uint16_t mat[4][8][8];
    uint32_t count = in0.vec;
    for (uint32_t k = 0; k < count; ++k)
      for (uint32_t r = 0; r < 8; ++r) {
        Thread *t = byLane(k * 8 + r);
        uint64_t a = addrOf(in0.ops[1], regsOf(*t));
        std::memcpy(mat[k][r], mem(*t, Space::Shared, a, 16, 16, "ldmatrix",
                               Access::Read),
                    16);
      }
    bool trans = in0.flags & kTrans;
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t lane = lanes[i], row = lane / 4, col = 2 * (lane % 4);
      for (uint32_t k = 0; k < count; ++k) {
        uint32_t lo = trans ? mat[k][col][row] : mat[k][row][col];
        uint32_t hi = trans ? mat[k][col + 1][row] : mat[k][row][col + 1];
        out[i][k] = lo | (hi << 16);
      }
    }
    for (uint32_t i = 0; i < n; ++i) {
      uint64_t *R = regsOf(*members[i]);
      for (uint32_t k = 0; k < count; ++k)
        if (in0.vregs[in0.ops[0].reg + k] != kNoReg)
          R[in0.vregs[in0.ops[0].reg + k]] = out[i][k];
    }
    return;
  }
  case Op::Mma: {
    // m16n8k16, A row-major 16x16, B column-major 16x8, C/D 16x8 f32; the
    // fragment layouts of the PTX ISA ("mma.m16n8k16" for 16-bit types).
    if (n != 32)
      fault(first, "mma.sync needs all 32 lanes of the warp");
    float A[16][16], Bt[8][16], C[16][8]; // B stored transposed (by column)
    bool bf = in0.ty2 == Ty::BF16;
    auto half = [&](uint64_t v) {
      return bf ? bf16ToF32(v) : f16ToF32(v);
    };
    const uint32_t *vr = in0.vregs.data();
    for (uint32_t i = 0; i < 32; ++i) {
      const uint64_t *R = regsOf(*byLane(i));
      uint32_t g = i / 4, tg = i % 4;
      auto reg = [&](const Operand &o, uint32_t k) -> uint64_t {
        uint32_t r = vr[o.reg + k];
        return r == kNoReg ? 0 : R[r];
      };
      for (uint32_t k = 0; k < 4; ++k) {
        uint64_t v = reg(in0.ops[1], k);
        uint32_t row = g + ((k & 1) ? 8 : 0), col = 2 * tg + ((k & 2) ? 8 : 0);
        A[row][col] = half(v);
        A[row][col + 1] = half(v >> 16);
      }
      for (uint32_t k = 0; k < 2; ++k) {
        uint64_t v = reg(in0.ops[2], k);
        uint32_t kk = 2 * tg + (k ? 8 : 0);
        Bt[g][kk] = half(v);
        Bt[g][kk + 1] = half(v >> 16);
      }
      for (uint32_t k = 0; k < 4; ++k)
        C[g + ((k & 2) ? 8 : 0)][2 * tg + (k & 1)] =
            asF32(reg(in0.ops[3], k));
    }
    for (uint32_t i = 0; i < 32; ++i) {
      uint64_t *R = regsOf(*byLane(i));
      uint32_t g = i / 4, tg = i % 4;
      for (uint32_t k = 0; k < 4; ++k) {
        uint32_t row = g + ((k & 2) ? 8 : 0), col = 2 * tg + (k & 1);
        // Products of 16-bit floats are exact in f32, their sum (to within
        // 2^-53 relative) in double: one rounding to f32 at the end.
        double acc = C[row][col];
        for (uint32_t kk = 0; kk < 16; ++kk)
          acc += double(A[row][kk] * Bt[col][kk]);
        uint32_t r = vr[in0.ops[0].reg + k];
        if (r != kNoReg)
          R[r] = bitsF32(float(acc));
      }
    }
    return;
  }
  default:
    fault(first, std::string("not a warp collective: ") + opName(in0.op));
  }
}

} // namespace tgrt::emu::detail
