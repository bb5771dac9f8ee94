// The pure part of the operator page: what each card says, as text, from one approval of the API.
// No DOM, so test/http/ui.test.ts runs this very file in Node; page.js calls cardText and parseExact.
//
// A grant lets exactly one call run: the tool with these exact `args` (the approval hash binds them,
// docs/spec.md section 4). The capability and presentation are what the policies picked from the
// arguments for review, and a rule's shape may pick only some of them: so each card shows the full
// call first, and names the arguments that no requirement's capability or presentation shows.
'use strict';

// data-field name -> the text shown there.
function cardText(approval) {
  var requester = approval.requester || {};
  var unshown = unshownPaths(approval);
  return {
    tool: text(approval.tool),
    kind: text(approval.kind),
    requirements: requirementsOf(approval)
      .map(function (r, i) {
        return i + 1 + '. ' + text(r.reason) + '\n   (policy ' + text(r.policy) + ', rule ' + text(r.rule) + ', kind ' + text(r.kind) + ')';
      })
      .join('\n'),
    requester: text(requester.sub) + (requester.team ? ' (team ' + requester.team + ')' : ''),
    run_id: approval.run_id ? text(approval.run_id) : '(none)',
    expires_at: text(approval.expires_at),
    args: json(approval.args),
    context: approval.context ? json(approval.context) : '(none)',
    capability: json(approval.capability),
    presentation: json(approval.presentation),
    presentation_label: text(approval.presentation_label),
    unshown:
      unshown.length === 0
        ? ''
        : 'Not in the capability or the presentation, but part of the call: ' +
          unshown
            .map(function (p) {
              return JSON.stringify(p);
            })
            .join(', '),
  };
}

function text(value) {
  return value == null ? '' : String(value);
}

// Every policy file that asked for this approval; an approval without the list has one.
function requirementsOf(approval) {
  if (Array.isArray(approval.requirements) && approval.requirements.length > 0) return approval.requirements;
  return [
    { policy: '', rule: approval.rule, kind: approval.kind, reason: approval.reason, capability: approval.capability, presentation: approval.presentation },
  ];
}
function json(value) {
  return JSON.stringify(value === undefined ? {} : value, null, 2).replace(EXACT_IN_JSON, '$1');
}

// Numbers exactly as the API writes them (the grant lets that text run, and JSON.parse would show
// 12345678901234567890 as 12345678901234567000). Where the browser gives the reviver a number's
// source text (Chromium 114+, Firefox 135+), a number whose text is not its double's is kept as
// that text behind a marker no API string can hold (U+0000), and json() writes it back bare.
var EXACT = '\u0000exact:';
var EXACT_IN_JSON = /"\\u0000exact:([-+.0-9eE]+)"/g;
function parseExact(body) {
  return JSON.parse(body, function (_key, value, context) {
    if (typeof value === 'number' && context && typeof context.source === 'string' && context.source !== String(value)) {
      return EXACT + context.source;
    }
    return value;
  });
}

// The argument paths (dotted, as a rule's approval shape names them) that no requirement's
// capability or presentation shows. A view that is the default shape {tool, args} shows every argument.
function unshownPaths(approval) {
  var args = approval.args || {};
  var shown = [];
  var views = [];
  requirementsOf(approval).forEach(function (r) {
    views.push(r.capability, r.presentation);
  });
  views.forEach(function (view) {
    if (!view || typeof view !== 'object') return;
    if (isWholeCall(view, approval)) shown.push([]);
    else
      Object.keys(view).forEach(function (path) {
        shown.push(path.split('.'));
      });
  });
  var out = [];
  function visit(value, path) {
    if (
      shown.some(function (s) {
        return isPrefix(s, path);
      })
    )
      return; // shown, or inside a shown value
    var inner = value !== null && typeof value === 'object' ? Object.keys(value) : [];
    // Only part of this value is shown: look inside it. Otherwise none of it is.
    if (
      inner.length > 0 &&
      shown.some(function (s) {
        return isPrefix(path, s);
      })
    ) {
      inner.forEach(function (key) {
        visit(value[key], path.concat(key));
      });
    } else {
      out.push(path.join('.'));
    }
  }
  Object.keys(args).forEach(function (key) {
    visit(args[key], [key]);
  });
  return out;
}

function isPrefix(prefix, path) {
  if (prefix.length > path.length) return false;
  for (var i = 0; i < prefix.length; i++) if (prefix[i] !== path[i]) return false;
  return true;
}

function isWholeCall(view, approval) {
  var keys = Object.keys(view);
  return keys.length === 2 && view.tool === approval.tool && Object.hasOwn(view, 'args') && JSON.stringify(view.args) === JSON.stringify(approval.args);
}
