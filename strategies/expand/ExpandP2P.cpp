// Pipeline transfers between stages: the asynchronous sends and receives, and Megatron-LM's blocking exchanges.
#include <variant>

#include "strategies/expand/Expander.hpp"

namespace placesim::detail {

std::vector<TaskId> Expander::send_boundary(int s, const StageOp& op) {
  std::vector<TaskId> sent(static_cast<std::size_t>(dl_ * tp_), kNoTask);
  const int vstage = virtual_stage(op.chunk, s);
  if ((op.forward && ends_model(vstage)) || (!op.forward && starts_model(vstage)) || e_.model.opaque()) return sent;
  const int dst_v = op.forward ? vstage + 1 : vstage - 1;
  const int dst = stage_of_virtual(e_.strategy.schedule, pp_, dst_v);
  if (dst == s) {  // a V's turn: the stage's next chunk takes the output where it is, once the op has ended
    for (int d = 0; d < dl_; ++d)
      for (int t = 0; t < tp_; ++t)
        for (TaskId end : frontier_[static_cast<std::size_t>(d * tp_ + t)])
          link_boundary(d, t, dst_v, op.microbatch, op.forward, end, true);
    return sent;
  }
  const std::int64_t x = local_seq_len(e_) * e_.training.micro_batch * e_.model.hidden;
  const bool piece = e_.strategy.sp || scatter_gather_;
  const double bytes = static_cast<double>(piece ? shard_elems(x, tp_) : x) * e_.training.activation_bytes();
  for (int d = 0; d < dl_; ++d) {
    for (int t = 0; t < tp_; ++t) {
      const std::size_t lane = static_cast<std::size_t>(d * tp_ + t);
      P2P p{rank(d, t, s), rank(d, t, dst), bytes, CommClass::PpP2P, op.microbatch, op.chunk, !op.forward};
      TaskId id = add_single(p, s, p.src, Stream::PpSend);
      for (TaskId dep : frontier_[lane]) g_.depend(dep, id);
      link_boundary(d, t, dst_v, op.microbatch, op.forward, id, true);
      sent[lane] = id;
    }
  }
  return sent;
}

void Expander::link_boundary(int d, int t, int vstage, int mb, bool forward, TaskId task, bool is_producer) {
  Boundary& b = boundaries_[{d, t, vstage, mb, forward}];
  if (is_producer) {
    b.producers.push_back(task);
    for (TaskId c : b.consumers) g_.depend(task, c);
    for (TaskId p : b.posters) g_.depend(p, task);
    return;
  }
  b.consumers.push_back(task);
  for (TaskId producer : b.producers) g_.depend(producer, task);
}

void Expander::post_boundary(const BoundaryKey& key, const std::vector<TaskId>& tail) {
  Boundary& b = boundaries_[key];
  if (!b.producers.empty())
    for (TaskId p : tail)
      for (TaskId producer : b.producers) g_.depend(p, producer);
  else
    b.posters.insert(b.posters.end(), tail.begin(), tail.end());
}

void Expander::link_op_inputs(int d, int t, int vstage, int mb, bool forward, TaskId task) {
  link_boundary(d, t, vstage, mb, forward, task, false);
  for (const BoundaryKey& key : call_recvs_[static_cast<std::size_t>(d * tp_ + t)])
    if (key != BoundaryKey{d, t, vstage, mb, forward})
      link_boundary(std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key), std::get<4>(key), task,
                    false);
}

bool Expander::has_input(int s, const PipeOp& op) const {
  const int vstage = virtual_stage(op.chunk, s);
  return op.kind == PipeOpKind::Forward ? !starts_model(vstage) : !ends_model(vstage);
}

void Expander::receive_gather(int s, const PipeOp& op) {
  if (!has_input(s, op)) return;
  const int vstage = virtual_stage(op.chunk, s);
  const bool forward = op.kind == PipeOpKind::Forward;
  const std::int64_t x = local_seq_len(e_) * e_.training.micro_batch * e_.model.hidden;
  for (int d = 0; d < dl_; ++d) {
    Collective c = tp_group_collective(d, s, CollectiveOp::AllGather, x, e_.training.activation_bytes());
    c.microbatch = op.microbatch;
    c.backward = !forward;
    TaskId id = add_collective(c, s);
    for (int t = 0; t < tp_; ++t) {
      const std::size_t lane = static_cast<std::size_t>(d * tp_ + t);
      link_boundary(d, t, vstage, op.microbatch, forward, id, false);
      for (TaskId dep : op_tail_[lane]) g_.depend(dep, id);
      op_tail_[lane].push_back(id);
    }
  }
}

// Megatron-LM exchanges after every op, except that the interleaved steady state runs a forward and the backward
// after it back to back and exchanges once for both (send_forward_backward_recv_forward_backward).
bool Expander::ends_call(const std::vector<PipeOp>& order, int i) const {
  const int n = static_cast<int>(order.size());
  int next = i + 1;
  while (next < n && order[static_cast<std::size_t>(next)].kind != PipeOpKind::Forward &&
         order[static_cast<std::size_t>(next)].kind != PipeOpKind::Backward)
    ++next;
  if (next == n) return true;
  // Every forward in the stage's warm-up: Megatron-Core exchanges the last forward's output on its own and receives
  // the first backward's input in a separate call (are_all_microbatches_in_warmup).
  if (all_warmup_) return true;
  return !(v_ > 1 && order[static_cast<std::size_t>(i)].kind == PipeOpKind::Forward &&
           order[static_cast<std::size_t>(next)].kind == PipeOpKind::Backward);
}

std::vector<std::vector<TaskId>> Expander::send_unsent(int s, std::vector<StageOp>& unsent) {
  std::vector<std::vector<TaskId>> sends(static_cast<std::size_t>(dl_ * tp_));
  for (const StageOp& op : unsent) {
    std::vector<TaskId> ids = send_boundary(s, op);
    for (std::size_t lane = 0; lane < ids.size(); ++lane)
      if (ids[lane] != kNoTask) sends[lane].push_back(ids[lane]);
  }
  unsent.clear();
  return sends;
}

void Expander::p2p_call(int s, const std::vector<PipeOp>& order, int i, std::vector<StageOp>& unsent) {
  if (deepspeed_p2p_) {
    deepspeed_exchange(s, order, i, unsent);
    return;
  }
  const std::vector<std::vector<TaskId>> sends = send_unsent(s, unsent);
  post_receives(s, order, i + 1);
  // Blocking: what follows the exchange waits for its sends too.
  for (std::size_t lane = 0; lane < sends.size(); ++lane)
    op_tail_[lane].insert(op_tail_[lane].end(), sends[lane].begin(), sends[lane].end());
}

// DeepSpeed's slots: a forward slot runs RecvActivation, SendGrad, ForwardPass; a backward slot SendActivation,
// RecvGrad, BackwardPass; each call blocks alone. Between op i and the next op the stage therefore receives first
// only when a backward is followed by a forward; the received pieces are all-gathered inside the next op's pass
// (after the send), and a backward first gathers again the output the stage sent for it.
void Expander::deepspeed_exchange(int s, const std::vector<PipeOp>& order, int i, std::vector<StageOp>& unsent) {
  int next = i + 1;
  const int n = static_cast<int>(order.size());
  while (next < n && order[static_cast<std::size_t>(next)].kind != PipeOpKind::Forward &&
         order[static_cast<std::size_t>(next)].kind != PipeOpKind::Backward)
    ++next;
  const bool receive_first = order[static_cast<std::size_t>(i)].kind == PipeOpKind::Backward && next < n &&
                             order[static_cast<std::size_t>(next)].kind == PipeOpKind::Forward;
  std::vector<std::vector<TaskId>> sends;
  if (receive_first) {
    post_receives(s, order, i + 1, false);
    sends = send_unsent(s, unsent);
    // The send is issued once the receive has returned: it waits for the incoming transfer.
    for (int d = 0; d < dl_; ++d)
      for (int t = 0; t < tp_; ++t) {
        const std::size_t lane = static_cast<std::size_t>(d * tp_ + t);
        for (TaskId send : sends[lane])
          for (const BoundaryKey& key : call_recvs_[lane])
            link_boundary(std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key), std::get<4>(key),
                          send, false);
      }
    for (std::size_t lane = 0; lane < sends.size(); ++lane)
      op_tail_[lane].insert(op_tail_[lane].end(), sends[lane].begin(), sends[lane].end());
    if (scatter_gather_ && next < n && has_input(s, order[static_cast<std::size_t>(next)]))
      receive_gather(s, order[static_cast<std::size_t>(next)]);
  } else {
    sends = send_unsent(s, unsent);
    for (std::size_t lane = 0; lane < sends.size(); ++lane)
      op_tail_[lane].insert(op_tail_[lane].end(), sends[lane].begin(), sends[lane].end());
    post_receives(s, order, i + 1);
  }
  if (next < n && order[static_cast<std::size_t>(next)].kind == PipeOpKind::Backward)
    regather_output(s, order[static_cast<std::size_t>(next)]);
}

void Expander::regather_output(int s, const PipeOp& op) {
  const int vstage = virtual_stage(op.chunk, s);
  if (!scatter_gather_ || ends_model(vstage)) return;
  const std::int64_t x = local_seq_len(e_) * e_.training.micro_batch * e_.model.hidden;
  for (int d = 0; d < dl_; ++d) {
    Collective c = tp_group_collective(d, s, CollectiveOp::AllGather, x, e_.training.activation_bytes());
    c.microbatch = op.microbatch;
    c.backward = true;
    TaskId id = add_collective(c, s);
    for (int t = 0; t < tp_; ++t) {
      const std::size_t lane = static_cast<std::size_t>(d * tp_ + t);
      for (TaskId dep : op_tail_[lane]) g_.depend(dep, id);
      op_tail_[lane].push_back(id);
    }
  }
}

// The exchange posts the receives of the ops up to the next exchange once the device's tail is done; the first of
// those ops waits for all of them (and for their all-gathers with scatter-gather).
void Expander::post_receives(int s, const std::vector<PipeOp>& order, int first, bool gather) {
  for (auto& keys : call_recvs_) keys.clear();
  const std::vector<std::vector<TaskId>> tail = op_tail_;
  for (int k = first; k < static_cast<int>(order.size()); ++k) {
    const PipeOp& op = order[static_cast<std::size_t>(k)];
    if (op.kind != PipeOpKind::Forward && op.kind != PipeOpKind::Backward) continue;
    if (has_input(s, op)) {
      const int vstage = virtual_stage(op.chunk, s);
      const bool forward = op.kind == PipeOpKind::Forward;
      for (int d = 0; d < dl_; ++d)
        for (int t = 0; t < tp_; ++t) {
          const std::size_t lane = static_cast<std::size_t>(d * tp_ + t);
          BoundaryKey key{d, t, vstage, op.microbatch, forward};
          post_boundary(key, tail[lane]);
          call_recvs_[lane].push_back(key);
        }
      if (scatter_gather_ && gather) receive_gather(s, op);
    }
    if (ends_call(order, k)) break;
  }
}

}  // namespace placesim::detail
