// The budget line: after each step of a task with a budget (safety.max_cost_usd,
// safety.max_tokens_total), `budget_used` says what is spent: "$0.0123 of $0.05 · 1234 of
// 5000 tokens", with a bar of the larger share. Hidden while the shown run has no budget.
// Uses $ from panel.js.
"use strict";

const Budget = (() => {
  function hide() {
    $("budget").hidden = true;
  }

  function render(r) {
    const cost = Number(r.cost_usd) || 0;
    const tokens = Number(r.tokens) || 0;
    const shares = [];
    let money = `$${cost.toFixed(4)}`;
    if (r.max_cost_usd != null) {
      money += ` of $${r.max_cost_usd}`;
      shares.push(cost / r.max_cost_usd);
    }
    let count = `${tokens} tokens`;
    if (r.max_tokens != null) {
      count = `${tokens} of ${r.max_tokens} tokens`;
      shares.push(tokens / r.max_tokens);
    }
    if (!shares.length) { hide(); return; }
    const share = Math.min(1, Math.max(...shares));
    $("budget-text").textContent = `${money} · ${count}`;
    const bar = $("budget-bar");
    bar.value = share;
    bar.textContent = `${Math.round(share * 100)}%`;
    bar.title = `${Math.round(share * 100)}% of the budget used`;
    $("budget").dataset.level = share >= 0.8 ? "near" : "ok";
    $("budget").hidden = false;
  }

  document.addEventListener("jarvis:show", hide);
  document.addEventListener("jarvis:apply", (event) => {
    const r = event.detail;
    if (r.kind === "task_started") hide();  // a new run: its own budget, from its first step
    else if (r.kind === "budget_used") render(r);
  });
  return { render };
})();
