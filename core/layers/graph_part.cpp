#include "layers/graph_part.h"

#include <algorithm>
#include <memory>

#include "device/device.h"
#include "kernels/kernel_cache.h"
#include "layers/activation.h"
#include "layers/merge.h"

namespace tandem {

void add_in_layout(Tensor& slot, const Tensor& t, const Tensor& like, Device& device) {
    if (!t.defined()) return;
    const Tensor g = in_layout(t, like.layout(), device);
    if (!slot.defined()) {
        slot = g;
        return;
    }
    Tensor sum = Tensor::empty(like.shape(), device, DType::f32, like.layout());
    tensor_ops(device).add(slot, g, sum);
    slot = std::move(sum);
}

GraphPart::GraphPart(std::vector<PartNode> nodes, std::vector<std::size_t> outputs)
    : nodes_(std::move(nodes)), relu_after_(nodes_.size(), kNone), relu_of_(nodes_.size(), kNone),
      spent_after_(nodes_.size()) {
    // A value made here is spent after its last reader, or after the node making it when
    // nothing here reads it; the outputs never are.
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        const std::size_t v = nodes_[i].output;
        if (std::find(outputs.begin(), outputs.end(), v) != outputs.end()) continue;
        std::size_t last = i;
        for (std::size_t j = i + 1; j < nodes_.size(); ++j)
            if (std::find(nodes_[j].inputs.begin(), nodes_[j].inputs.end(), v) !=
                nodes_[j].inputs.end())
                last = j;
        spent_after_[last].push_back(v);
    }
    for (const PartNode& node : nodes_)
        read_.insert(read_.end(), node.inputs.begin(), node.inputs.end());
    std::sort(read_.begin(), read_.end());
    // A layer whose output only a ReLU reads, here, may apply it (the caller reads no output
    // of this part's making but those listed).
    for (std::size_t j = 0; j < nodes_.size(); ++j) {
        const PartNode& relu = nodes_[j];
        if (relu.merge || !relu.layer || !is_relu(*relu.layer) || relu.inputs.size() != 1) continue;
        const std::size_t v = relu.inputs[0];
        if (std::count(read_.begin(), read_.end(), v) != 1 ||
            std::find(outputs.begin(), outputs.end(), v) != outputs.end())
            continue;
        for (std::size_t i = 0; i < j; ++i)
            if (nodes_[i].output == v && !nodes_[i].merge && nodes_[i].layer) {
                relu_after_[i] = j;
                relu_of_[j] = i;
            }
    }
}

bool GraphPart::reads(std::size_t v) const {
    return std::binary_search(read_.begin(), read_.end(), v);
}

std::string GraphPart::context(std::size_t i, const Pass& pass, const char* direction) const {
    return "in " + nodes_[i].where + " on " + pass.device.name() + ", micro-batch " +
           std::to_string(pass.micro_batch) + ", " + direction;
}

void GraphPart::forward(std::vector<Tensor>& values, Pass& pass, std::size_t begin, std::size_t end,
                        Keep keep) {
    for (std::size_t i = begin; i < end; ++i) {
        const PartNode& node = nodes_[i];
        try {
            std::vector<Tensor> xs;
            for (std::size_t v : node.inputs) xs.push_back(values[v]);
            if (relu_taken(i, pass))
                values[node.output] = xs[0];  // the node before applied it
            else if (node.merge)
                values[node.output] = node.merge->merge(xs, pass);
            else
                values[node.output] = fuses_relu(i, pass) ? node.layer->forward_relu(xs[0], pass)
                                                          : node.layer->forward(xs[0], pass);
        } catch (Error& e) {
            e.add_context(context(i, pass, "forward"));
            throw;
        }
        if (keep == Keep::outputs)
            for (std::size_t v : spent_after_[i]) values[v] = Tensor();
    }
}

void GraphPart::forward_many(std::vector<std::vector<Tensor>>& values,
                             const std::vector<Pass*>& passes) {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        const PartNode& node = nodes_[i];
        if (node.merge !=
            nullptr) {  // a join has no statistics to share: one micro-batch at a time
            for (std::size_t m = 0; m < passes.size(); ++m)
                forward(values[m], *passes[m], i, i + 1);
            continue;
        }
        try {
            std::vector<Tensor> xs;
            for (auto& v : values) xs.push_back(v[node.inputs[0]]);
            std::vector<Tensor> ys = node.layer->forward_many(xs, passes);
            for (std::size_t m = 0; m < values.size(); ++m)
                values[m][node.output] = std::move(ys[m]);
        } catch (Error& e) {
            e.add_context(context(i, *passes.front(), "forward of micro-batches together"));
            throw;
        }
    }
}

void GraphPart::add_input_gradients(const PartNode& node, const std::vector<Tensor>& values,
                                    std::vector<Tensor>& grads, const std::vector<Tensor>& dxs,
                                    Device& device) const {
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
        const Tensor& x = values[node.inputs[k]];
        TANDEM_CHECK_AS(ShapeError, !dxs[k].defined() || dxs[k].shape() == x.shape())
            << "the gradient of input " << k + 1 << " is " << dxs[k].shape().to_string()
            << ", the input is " << x.shape().to_string();
        add_in_layout(grads[node.inputs[k]], dxs[k], x, device);
    }
}

void GraphPart::backward(const std::vector<Tensor>& values, std::vector<Tensor>& grads, Pass& pass,
                         std::size_t low, std::size_t high) {
    for (std::size_t i = high; i-- > low;) {
        const PartNode& node = nodes_[i];
        Tensor dy = std::move(grads[node.output]);
        grads[node.output] = Tensor();
        if (!dy.defined()) continue;  // feeds nothing that got a gradient
        try {
            std::vector<Tensor> xs;
            for (std::size_t v : node.inputs) xs.push_back(values[v]);
            NeedDx need(pass, node.need_dx.value_or(pass.need_dx));
            std::vector<Tensor> dxs;
            if (relu_taken(i, pass))
                dxs = {dy};  // the node before masks it
            else if (node.merge)
                dxs = node.merge->unmerge(xs, dy, pass);
            else
                dxs = {fuses_relu(i, pass) ? node.layer->backward_relu(xs[0], dy, pass)
                                           : node.layer->backward(xs[0], dy, pass)};
            add_input_gradients(node, values, grads, dxs, pass.device);
        } catch (Error& e) {
            e.add_context(context(i, pass, "backward"));
            throw;
        }
    }
}

void GraphPart::backward_many(const std::vector<std::vector<Tensor>>& values,
                              std::vector<std::vector<Tensor>>& grads,
                              const std::vector<Pass*>& passes) {
    for (std::size_t i = nodes_.size(); i-- > 0;) {
        const PartNode& node = nodes_[i];
        bool any = false;
        for (auto& g : grads) any = any || g[node.output].defined();
        if (!any) continue;
        if (node.merge != nullptr) {
            for (std::size_t m = 0; m < passes.size(); ++m)
                backward(values[m], grads[m], *passes[m], i, i + 1);
            continue;
        }
        try {
            std::vector<Tensor> xs, dys;
            std::vector<std::unique_ptr<NeedDx>> need;
            for (std::size_t m = 0; m < passes.size(); ++m) {
                xs.push_back(values[m][node.inputs[0]]);
                Tensor dy = std::move(grads[m][node.output]);
                grads[m][node.output] = Tensor();
                if (!dy.defined()) {  // this micro-batch's readers gave none: zero
                    const Tensor& y = values[m][node.output];
                    dy = Tensor::empty(y.shape(), passes[m]->device, DType::f32, y.layout());
                    tensor_ops(passes[m]->device).fill(dy, 0);
                }
                dys.push_back(std::move(dy));
                need.push_back(std::make_unique<NeedDx>(*passes[m],
                                                        node.need_dx.value_or(passes[m]->need_dx)));
            }
            const std::vector<Tensor> dxs = node.layer->backward_many(xs, dys, passes);
            for (std::size_t m = 0; m < passes.size(); ++m)
                add_input_gradients(node, values[m], grads[m], {dxs[m]}, passes[m]->device);
        } catch (Error& e) {
            e.add_context(context(i, *passes.front(), "backward of micro-batches together"));
            throw;
        }
    }
}

}  // namespace tandem
