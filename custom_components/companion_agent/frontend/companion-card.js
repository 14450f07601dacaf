// node_modules/@lit/reactive-element/css-tag.js
var e = globalThis, t = e.ShadowRoot && (e.ShadyCSS === void 0 || e.ShadyCSS.nativeShadow) && "adoptedStyleSheets" in Document.prototype && "replace" in CSSStyleSheet.prototype, n = Symbol(), r = /* @__PURE__ */ new WeakMap(), i = class {
	constructor(e, t, r) {
		if (this._$cssResult$ = !0, r !== n) throw Error("CSSResult is not constructable. Use `unsafeCSS` or `css` instead.");
		this.cssText = e, this.t = t;
	}
	get styleSheet() {
		let e = this.o, n = this.t;
		if (t && e === void 0) {
			let t = n !== void 0 && n.length === 1;
			t && (e = r.get(n)), e === void 0 && ((this.o = e = new CSSStyleSheet()).replaceSync(this.cssText), t && r.set(n, e));
		}
		return e;
	}
	toString() {
		return this.cssText;
	}
}, a = (e) => new i(typeof e == "string" ? e : e + "", void 0, n), o = (e, ...t) => new i(e.length === 1 ? e[0] : t.reduce((t, n, r) => t + ((e) => {
	if (!0 === e._$cssResult$) return e.cssText;
	if (typeof e == "number") return e;
	throw Error("Value passed to 'css' function must be a 'css' function result: " + e + ". Use 'unsafeCSS' to pass non-literal values, but take care to ensure page security.");
})(n) + e[r + 1], e[0]), e, n), s = (n, r) => {
	if (t) n.adoptedStyleSheets = r.map((e) => e instanceof CSSStyleSheet ? e : e.styleSheet);
	else for (let t of r) {
		let r = document.createElement("style"), i = e.litNonce;
		i !== void 0 && r.setAttribute("nonce", i), r.textContent = t.cssText, n.appendChild(r);
	}
}, c = t ? (e) => e : (e) => e instanceof CSSStyleSheet ? ((e) => {
	let t = "";
	for (let n of e.cssRules) t += n.cssText;
	return a(t);
})(e) : e, { is: l, defineProperty: u, getOwnPropertyDescriptor: d, getOwnPropertyNames: ee, getOwnPropertySymbols: te, getPrototypeOf: ne } = Object, f = globalThis, p = f.trustedTypes, re = p ? p.emptyScript : "", ie = f.reactiveElementPolyfillSupport, m = (e, t) => e, h = {
	toAttribute(e, t) {
		switch (t) {
			case Boolean:
				e = e ? re : null;
				break;
			case Object:
			case Array: e = e == null ? e : JSON.stringify(e);
		}
		return e;
	},
	fromAttribute(e, t) {
		let n = e;
		switch (t) {
			case Boolean:
				n = e !== null;
				break;
			case Number:
				n = e === null ? null : Number(e);
				break;
			case Object:
			case Array: try {
				n = JSON.parse(e);
			} catch {
				n = null;
			}
		}
		return n;
	}
}, ae = (e, t) => !l(e, t), oe = {
	attribute: !0,
	type: String,
	converter: h,
	reflect: !1,
	useDefault: !1,
	hasChanged: ae
};
Symbol.metadata ??= Symbol("metadata"), f.litPropertyMetadata ??= /* @__PURE__ */ new WeakMap();
var g = class extends HTMLElement {
	static addInitializer(e) {
		this._$Ei(), (this.l ??= []).push(e);
	}
	static get observedAttributes() {
		return this.finalize(), this._$Eh && [...this._$Eh.keys()];
	}
	static createProperty(e, t = oe) {
		if (t.state && (t.attribute = !1), this._$Ei(), this.prototype.hasOwnProperty(e) && ((t = Object.create(t)).wrapped = !0), this.elementProperties.set(e, t), !t.noAccessor) {
			let n = Symbol(), r = this.getPropertyDescriptor(e, n, t);
			r !== void 0 && u(this.prototype, e, r);
		}
	}
	static getPropertyDescriptor(e, t, n) {
		let { get: r, set: i } = d(this.prototype, e) ?? {
			get() {
				return this[t];
			},
			set(e) {
				this[t] = e;
			}
		};
		return {
			get: r,
			set(t) {
				let a = r?.call(this);
				i?.call(this, t), this.requestUpdate(e, a, n);
			},
			configurable: !0,
			enumerable: !0
		};
	}
	static getPropertyOptions(e) {
		return this.elementProperties.get(e) ?? oe;
	}
	static _$Ei() {
		if (this.hasOwnProperty(m("elementProperties"))) return;
		let e = ne(this);
		e.finalize(), e.l !== void 0 && (this.l = [...e.l]), this.elementProperties = new Map(e.elementProperties);
	}
	static finalize() {
		if (this.hasOwnProperty(m("finalized"))) return;
		if (this.finalized = !0, this._$Ei(), this.hasOwnProperty(m("properties"))) {
			let e = this.properties, t = [...ee(e), ...te(e)];
			for (let n of t) this.createProperty(n, e[n]);
		}
		let e = this[Symbol.metadata];
		if (e !== null) {
			let t = litPropertyMetadata.get(e);
			if (t !== void 0) for (let [e, n] of t) this.elementProperties.set(e, n);
		}
		this._$Eh = /* @__PURE__ */ new Map();
		for (let [e, t] of this.elementProperties) {
			let n = this._$Eu(e, t);
			n !== void 0 && this._$Eh.set(n, e);
		}
		this.elementStyles = this.finalizeStyles(this.styles);
	}
	static finalizeStyles(e) {
		let t = [];
		if (Array.isArray(e)) {
			let n = new Set(e.flat(1 / 0).reverse());
			for (let e of n) t.unshift(c(e));
		} else e !== void 0 && t.push(c(e));
		return t;
	}
	static _$Eu(e, t) {
		let n = t.attribute;
		return !1 === n ? void 0 : typeof n == "string" ? n : typeof e == "string" ? e.toLowerCase() : void 0;
	}
	constructor() {
		super(), this._$Ep = void 0, this.isUpdatePending = !1, this.hasUpdated = !1, this._$Em = null, this._$Ev();
	}
	_$Ev() {
		this._$ES = new Promise((e) => this.enableUpdating = e), this._$AL = /* @__PURE__ */ new Map(), this._$E_(), this.requestUpdate(), this.constructor.l?.forEach((e) => e(this));
	}
	addController(e) {
		(this._$EO ??= /* @__PURE__ */ new Set()).add(e), this.renderRoot !== void 0 && this.isConnected && e.hostConnected?.();
	}
	removeController(e) {
		this._$EO?.delete(e);
	}
	_$E_() {
		let e = /* @__PURE__ */ new Map(), t = this.constructor.elementProperties;
		for (let n of t.keys()) this.hasOwnProperty(n) && (e.set(n, this[n]), delete this[n]);
		e.size > 0 && (this._$Ep = e);
	}
	createRenderRoot() {
		let e = this.shadowRoot ?? this.attachShadow(this.constructor.shadowRootOptions);
		return s(e, this.constructor.elementStyles), e;
	}
	connectedCallback() {
		this.renderRoot ??= this.createRenderRoot(), this.enableUpdating(!0), this._$EO?.forEach((e) => e.hostConnected?.());
	}
	enableUpdating(e) {}
	disconnectedCallback() {
		this._$EO?.forEach((e) => e.hostDisconnected?.());
	}
	attributeChangedCallback(e, t, n) {
		this._$AK(e, n);
	}
	_$ET(e, t) {
		let n = this.constructor.elementProperties.get(e), r = this.constructor._$Eu(e, n);
		if (r !== void 0 && !0 === n.reflect) {
			let i = (n.converter?.toAttribute === void 0 ? h : n.converter).toAttribute(t, n.type);
			this._$Em = e, i == null ? this.removeAttribute(r) : this.setAttribute(r, i), this._$Em = null;
		}
	}
	_$AK(e, t) {
		let n = this.constructor, r = n._$Eh.get(e);
		if (r !== void 0 && this._$Em !== r) {
			let e = n.getPropertyOptions(r), i = typeof e.converter == "function" ? { fromAttribute: e.converter } : e.converter?.fromAttribute === void 0 ? h : e.converter;
			this._$Em = r;
			let a = i.fromAttribute(t, e.type);
			this[r] = a ?? this._$Ej?.get(r) ?? a, this._$Em = null;
		}
	}
	requestUpdate(e, t, n, r = !1, i) {
		if (e !== void 0) {
			let a = this.constructor;
			if (!1 === r && (i = this[e]), n ??= a.getPropertyOptions(e), !((n.hasChanged ?? ae)(i, t) || n.useDefault && n.reflect && i === this._$Ej?.get(e) && !this.hasAttribute(a._$Eu(e, n)))) return;
			this.C(e, t, n);
		}
		!1 === this.isUpdatePending && (this._$ES = this._$EP());
	}
	C(e, t, { useDefault: n, reflect: r, wrapped: i }, a) {
		n && !(this._$Ej ??= /* @__PURE__ */ new Map()).has(e) && (this._$Ej.set(e, a ?? t ?? this[e]), !0 !== i || a !== void 0) || (this._$AL.has(e) || (this.hasUpdated || n || (t = void 0), this._$AL.set(e, t)), !0 === r && this._$Em !== e && (this._$Eq ??= /* @__PURE__ */ new Set()).add(e));
	}
	async _$EP() {
		this.isUpdatePending = !0;
		try {
			await this._$ES;
		} catch (e) {
			Promise.reject(e);
		}
		let e = this.scheduleUpdate();
		return e != null && await e, !this.isUpdatePending;
	}
	scheduleUpdate() {
		return this.performUpdate();
	}
	performUpdate() {
		if (!this.isUpdatePending) return;
		if (!this.hasUpdated) {
			if (this.renderRoot ??= this.createRenderRoot(), this._$Ep) {
				for (let [e, t] of this._$Ep) this[e] = t;
				this._$Ep = void 0;
			}
			let e = this.constructor.elementProperties;
			if (e.size > 0) for (let [t, n] of e) {
				let { wrapped: e } = n, r = this[t];
				!0 !== e || this._$AL.has(t) || r === void 0 || this.C(t, void 0, n, r);
			}
		}
		let e = !1, t = this._$AL;
		try {
			e = this.shouldUpdate(t), e ? (this.willUpdate(t), this._$EO?.forEach((e) => e.hostUpdate?.()), this.update(t)) : this._$EM();
		} catch (t) {
			throw e = !1, this._$EM(), t;
		}
		e && this._$AE(t);
	}
	willUpdate(e) {}
	_$AE(e) {
		this._$EO?.forEach((e) => e.hostUpdated?.()), this.hasUpdated || (this.hasUpdated = !0, this.firstUpdated(e)), this.updated(e);
	}
	_$EM() {
		this._$AL = /* @__PURE__ */ new Map(), this.isUpdatePending = !1;
	}
	get updateComplete() {
		return this.getUpdateComplete();
	}
	getUpdateComplete() {
		return this._$ES;
	}
	shouldUpdate(e) {
		return !0;
	}
	update(e) {
		this._$Eq &&= this._$Eq.forEach((e) => this._$ET(e, this[e])), this._$EM();
	}
	updated(e) {}
	firstUpdated(e) {}
};
g.elementStyles = [], g.shadowRootOptions = { mode: "open" }, g[m("elementProperties")] = /* @__PURE__ */ new Map(), g[m("finalized")] = /* @__PURE__ */ new Map(), ie?.({ ReactiveElement: g }), (f.reactiveElementVersions ??= []).push("2.1.2");
// node_modules/lit-html/lit-html.js
var _ = globalThis, se = (e) => e, v = _.trustedTypes, ce = v ? v.createPolicy("lit-html", { createHTML: (e) => e }) : void 0, y = "$lit$", b = `lit$${Math.random().toFixed(9).slice(2)}$`, x = "?" + b, le = `<${x}>`, S = document, C = () => S.createComment(""), w = (e) => e === null || typeof e != "object" && typeof e != "function", T = Array.isArray, ue = (e) => T(e) || typeof e?.[Symbol.iterator] == "function", E = "[ 	\n\f\r]", D = /<(?:(!--|\/[^a-zA-Z])|(\/?[a-zA-Z][^>\s]*)|(\/?$))/g, O = /-->/g, k = />/g, A = RegExp(`>|${E}(?:([^\\s"'>=/]+)(${E}*=${E}*(?:[^ \t\n\f\r"'\`<>=]|("|')|))|$)`, "g"), j = /'/g, M = /"/g, N = /^(?:script|style|textarea|title)$/i, de = (e) => (t, ...n) => ({
	_$litType$: e,
	strings: t,
	values: n
}), P = de(1), F = de(2), I = Symbol.for("lit-noChange"), L = Symbol.for("lit-nothing"), fe = /* @__PURE__ */ new WeakMap(), R = S.createTreeWalker(S, 129);
function z(e, t) {
	if (!T(e) || !e.hasOwnProperty("raw")) throw Error("invalid template strings array");
	return ce === void 0 ? t : ce.createHTML(t);
}
var pe = (e, t) => {
	let n = e.length - 1, r = [], i, a = t === 2 ? "<svg>" : t === 3 ? "<math>" : "", o = D;
	for (let t = 0; t < n; t++) {
		let n = e[t], s, c, l = -1, u = 0;
		for (; u < n.length && (o.lastIndex = u, c = o.exec(n), c !== null);) u = o.lastIndex, o === D ? c[1] === "!--" ? o = O : c[1] === void 0 ? c[2] === void 0 ? c[3] !== void 0 && (o = A) : (N.test(c[2]) && (i = RegExp("</" + c[2], "g")), o = A) : o = k : o === A ? c[0] === ">" ? (o = i ?? D, l = -1) : c[1] === void 0 ? l = -2 : (l = o.lastIndex - c[2].length, s = c[1], o = c[3] === void 0 ? A : c[3] === "\"" ? M : j) : o === M || o === j ? o = A : o === O || o === k ? o = D : (o = A, i = void 0);
		let d = o === A && e[t + 1].startsWith("/>") ? " " : "";
		a += o === D ? n + le : l >= 0 ? (r.push(s), n.slice(0, l) + y + n.slice(l) + b + d) : n + b + (l === -2 ? t : d);
	}
	return [z(e, a + (e[n] || "<?>") + (t === 2 ? "</svg>" : t === 3 ? "</math>" : "")), r];
}, B = class e {
	constructor({ strings: t, _$litType$: n }, r) {
		let i;
		this.parts = [];
		let a = 0, o = 0, s = t.length - 1, c = this.parts, [l, u] = pe(t, n);
		if (this.el = e.createElement(l, r), R.currentNode = this.el.content, n === 2 || n === 3) {
			let e = this.el.content.firstChild;
			e.replaceWith(...e.childNodes);
		}
		for (; (i = R.nextNode()) !== null && c.length < s;) {
			if (i.nodeType === 1) {
				if (i.hasAttributes()) for (let e of i.getAttributeNames()) if (e.endsWith(y)) {
					let t = u[o++], n = i.getAttribute(e).split(b), r = /([.?@])?(.*)/.exec(t);
					c.push({
						type: 1,
						index: a,
						name: r[2],
						strings: n,
						ctor: r[1] === "." ? he : r[1] === "?" ? ge : r[1] === "@" ? _e : U
					}), i.removeAttribute(e);
				} else e.startsWith(b) && (c.push({
					type: 6,
					index: a
				}), i.removeAttribute(e));
				if (N.test(i.tagName)) {
					let e = i.textContent.split(b), t = e.length - 1;
					if (t > 0) {
						i.textContent = v ? v.emptyScript : "";
						for (let n = 0; n < t; n++) i.append(e[n], C()), R.nextNode(), c.push({
							type: 2,
							index: ++a
						});
						i.append(e[t], C());
					}
				}
			} else if (i.nodeType === 8) {
				if (i.data === x) c.push({
					type: 2,
					index: a
				});
				else {
					let e = -1;
					for (; (e = i.data.indexOf(b, e + 1)) !== -1;) c.push({
						type: 7,
						index: a
					}), e += b.length - 1;
				}
			}
			a++;
		}
	}
	static createElement(e, t) {
		let n = S.createElement("template");
		return n.innerHTML = e, n;
	}
};
function V(e, t, n = e, r) {
	if (t === I) return t;
	let i = r === void 0 ? n._$Cl : n._$Co?.[r], a = w(t) ? void 0 : t._$litDirective$;
	return i?.constructor !== a && (i?._$AO?.(!1), a === void 0 ? i = void 0 : (i = new a(e), i._$AT(e, n, r)), r === void 0 ? n._$Cl = i : (n._$Co ??= [])[r] = i), i !== void 0 && (t = V(e, i._$AS(e, t.values), i, r)), t;
}
var me = class {
	constructor(e, t) {
		this._$AV = [], this._$AN = void 0, this._$AD = e, this._$AM = t;
	}
	get parentNode() {
		return this._$AM.parentNode;
	}
	get _$AU() {
		return this._$AM._$AU;
	}
	u(e) {
		let { el: { content: t }, parts: n } = this._$AD, r = (e?.creationScope ?? S).importNode(t, !0);
		R.currentNode = r;
		let i = R.nextNode(), a = 0, o = 0, s = n[0];
		for (; s !== void 0;) {
			if (a === s.index) {
				let t;
				s.type === 2 ? t = new H(i, i.nextSibling, this, e) : s.type === 1 ? t = new s.ctor(i, s.name, s.strings, this, e) : s.type === 6 && (t = new ve(i, this, e)), this._$AV.push(t), s = n[++o];
			}
			a !== s?.index && (i = R.nextNode(), a++);
		}
		return R.currentNode = S, r;
	}
	p(e) {
		let t = 0;
		for (let n of this._$AV) n !== void 0 && (n.strings === void 0 ? n._$AI(e[t]) : (n._$AI(e, n, t), t += n.strings.length - 2)), t++;
	}
}, H = class e {
	get _$AU() {
		return this._$AM?._$AU ?? this._$Cv;
	}
	constructor(e, t, n, r) {
		this.type = 2, this._$AH = L, this._$AN = void 0, this._$AA = e, this._$AB = t, this._$AM = n, this.options = r, this._$Cv = r?.isConnected ?? !0;
	}
	get parentNode() {
		let e = this._$AA.parentNode, t = this._$AM;
		return t !== void 0 && e?.nodeType === 11 && (e = t.parentNode), e;
	}
	get startNode() {
		return this._$AA;
	}
	get endNode() {
		return this._$AB;
	}
	_$AI(e, t = this) {
		e = V(this, e, t), w(e) ? e === L || e == null || e === "" ? (this._$AH !== L && this._$AR(), this._$AH = L) : e !== this._$AH && e !== I && this._(e) : e._$litType$ === void 0 ? e.nodeType === void 0 ? ue(e) ? this.k(e) : this._(e) : this.T(e) : this.$(e);
	}
	O(e) {
		return this._$AA.parentNode.insertBefore(e, this._$AB);
	}
	T(e) {
		this._$AH !== e && (this._$AR(), this._$AH = this.O(e));
	}
	_(e) {
		this._$AH !== L && w(this._$AH) ? this._$AA.nextSibling.data = e : this.T(S.createTextNode(e)), this._$AH = e;
	}
	$(e) {
		let { values: t, _$litType$: n } = e, r = typeof n == "number" ? this._$AC(e) : (n.el === void 0 && (n.el = B.createElement(z(n.h, n.h[0]), this.options)), n);
		if (this._$AH?._$AD === r) this._$AH.p(t);
		else {
			let e = new me(r, this), n = e.u(this.options);
			e.p(t), this.T(n), this._$AH = e;
		}
	}
	_$AC(e) {
		let t = fe.get(e.strings);
		return t === void 0 && fe.set(e.strings, t = new B(e)), t;
	}
	k(t) {
		T(this._$AH) || (this._$AH = [], this._$AR());
		let n = this._$AH, r, i = 0;
		for (let a of t) i === n.length ? n.push(r = new e(this.O(C()), this.O(C()), this, this.options)) : r = n[i], r._$AI(a), i++;
		i < n.length && (this._$AR(r && r._$AB.nextSibling, i), n.length = i);
	}
	_$AR(e = this._$AA.nextSibling, t) {
		for (this._$AP?.(!1, !0, t); e !== this._$AB;) {
			let t = se(e).nextSibling;
			se(e).remove(), e = t;
		}
	}
	setConnected(e) {
		this._$AM === void 0 && (this._$Cv = e, this._$AP?.(e));
	}
}, U = class {
	get tagName() {
		return this.element.tagName;
	}
	get _$AU() {
		return this._$AM._$AU;
	}
	constructor(e, t, n, r, i) {
		this.type = 1, this._$AH = L, this._$AN = void 0, this.element = e, this.name = t, this._$AM = r, this.options = i, n.length > 2 || n[0] !== "" || n[1] !== "" ? (this._$AH = Array(n.length - 1).fill(/* @__PURE__ */ new String()), this.strings = n) : this._$AH = L;
	}
	_$AI(e, t = this, n, r) {
		let i = this.strings, a = !1;
		if (i === void 0) e = V(this, e, t, 0), a = !w(e) || e !== this._$AH && e !== I, a && (this._$AH = e);
		else {
			let r = e, o, s;
			for (e = i[0], o = 0; o < i.length - 1; o++) s = V(this, r[n + o], t, o), s === I && (s = this._$AH[o]), a ||= !w(s) || s !== this._$AH[o], s === L ? e = L : e !== L && (e += (s ?? "") + i[o + 1]), this._$AH[o] = s;
		}
		a && !r && this.j(e);
	}
	j(e) {
		e === L ? this.element.removeAttribute(this.name) : this.element.setAttribute(this.name, e ?? "");
	}
}, he = class extends U {
	constructor() {
		super(...arguments), this.type = 3;
	}
	j(e) {
		this.element[this.name] = e === L ? void 0 : e;
	}
}, ge = class extends U {
	constructor() {
		super(...arguments), this.type = 4;
	}
	j(e) {
		this.element.toggleAttribute(this.name, !!e && e !== L);
	}
}, _e = class extends U {
	constructor(e, t, n, r, i) {
		super(e, t, n, r, i), this.type = 5;
	}
	_$AI(e, t = this) {
		if ((e = V(this, e, t, 0) ?? L) === I) return;
		let n = this._$AH, r = e === L && n !== L || e.capture !== n.capture || e.once !== n.once || e.passive !== n.passive, i = e !== L && (n === L || r);
		r && this.element.removeEventListener(this.name, this, n), i && this.element.addEventListener(this.name, this, e), this._$AH = e;
	}
	handleEvent(e) {
		typeof this._$AH == "function" ? this._$AH.call(this.options?.host ?? this.element, e) : this._$AH.handleEvent(e);
	}
}, ve = class {
	constructor(e, t, n) {
		this.element = e, this.type = 6, this._$AN = void 0, this._$AM = t, this.options = n;
	}
	get _$AU() {
		return this._$AM._$AU;
	}
	_$AI(e) {
		V(this, e);
	}
}, ye = _.litHtmlPolyfillSupport;
ye?.(B, H), (_.litHtmlVersions ??= []).push("3.3.3");
var be = (e, t, n) => {
	let r = n?.renderBefore ?? t, i = r._$litPart$;
	if (i === void 0) {
		let e = n?.renderBefore ?? null;
		r._$litPart$ = i = new H(t.insertBefore(C(), e), e, void 0, n ?? {});
	}
	return i._$AI(e), i;
}, W = globalThis, G = class extends g {
	constructor() {
		super(...arguments), this.renderOptions = { host: this }, this._$Do = void 0;
	}
	createRenderRoot() {
		let e = super.createRenderRoot();
		return this.renderOptions.renderBefore ??= e.firstChild, e;
	}
	update(e) {
		let t = this.render();
		this.hasUpdated || (this.renderOptions.isConnected = this.isConnected), super.update(e), this._$Do = be(t, this.renderRoot, this.renderOptions);
	}
	connectedCallback() {
		super.connectedCallback(), this._$Do?.setConnected(!0);
	}
	disconnectedCallback() {
		super.disconnectedCallback(), this._$Do?.setConnected(!1);
	}
	render() {
		return I;
	}
};
G._$litElement$ = !0, G.finalized = !0, W.litElementHydrateSupport?.({ LitElement: G });
var xe = W.litElementPolyfillSupport;
xe?.({ LitElement: G }), (W.litElementVersions ??= []).push("4.2.2");
// src/face.ts
var K = "M44 78 Q60 92 76 78", q = "M42 76 Q60 98 78 76 Z", J = "M46 82 L74 82", Se = "M46 86 Q60 74 74 86", Ce = "M52 80 a8 9 0 1 0 16 0 a8 9 0 1 0 -16 0", we = "M54 82 Q60 86 66 82", Y = "M44 84 Q50 78 56 84 T68 84 T80 84", Te = {
	neutral: {
		eyes: "round",
		mouth: we
	},
	calm: {
		eyes: "closed",
		mouth: K
	},
	joy: {
		eyes: "happy",
		mouth: q,
		blush: !0
	},
	happy: {
		eyes: "happy",
		mouth: K,
		blush: !0
	},
	excited: {
		eyes: "wide",
		mouth: q,
		brows: [-12, 12]
	},
	proud: {
		eyes: "happy",
		mouth: K,
		brows: [-8, 8]
	},
	love: {
		eyes: "heart",
		mouth: K,
		blush: !0
	},
	shy: {
		eyes: "side",
		mouth: we,
		blush: !0
	},
	sad: {
		eyes: "sad",
		mouth: Se,
		brows: [14, -14]
	},
	worried: {
		eyes: "round",
		mouth: Y,
		brows: [14, -14]
	},
	fear: {
		eyes: "wide",
		mouth: Y,
		brows: [18, -18]
	},
	angry: {
		eyes: "angry",
		mouth: Se,
		brows: [-20, 20]
	},
	surprise: {
		eyes: "wide",
		mouth: Ce,
		brows: [-6, 6]
	},
	surprised: {
		eyes: "wide",
		mouth: Ce,
		brows: [-6, 6]
	},
	confused: {
		eyes: "round",
		mouth: Y,
		brows: [10, 0]
	},
	think: {
		eyes: "side",
		mouth: J,
		brows: [0, -10]
	},
	tired: {
		eyes: "closed",
		mouth: J
	}
};
function Ee(e) {
	return Te[e.toLowerCase()] ?? Te.neutral;
}
function De(e, t) {
	switch (t) {
		case "happy": return F`<path class="eye" d="M${e - 7} 54 Q${e} 44 ${e + 7} 54" />`;
		case "closed": return F`<path class="eye" d="M${e - 7} 52 Q${e} 57 ${e + 7} 52" />`;
		case "wide": return F`<circle class="eye-fill" cx=${e} cy="50" r="7" /><circle class="glint" cx=${e + 2} cy="48" r="2" />`;
		case "sad": return F`<circle class="eye-fill" cx=${e} cy="54" r="4.5" />`;
		case "angry": return F`<path class="eye-fill" d="M${e - 6} 49 L${e + 6} 53 L${e + 5} 57 L${e - 5} 57 Z" />`;
		case "heart": return F`<path class="heart" d="M${e} 58 l-6 -6 a3.5 3.5 0 0 1 6 -4 a3.5 3.5 0 0 1 6 4 Z" />`;
		case "side": return F`<circle class="eye-fill" cx=${e + 3} cy="50" r="4.5" />`;
		default: return F`<circle class="eye-fill blink" cx=${e} cy="52" r="5" />`;
	}
}
function X(e, t) {
	return F`<path class="brow" d="M${e - 8} 38 L${e + 8} 38" transform="rotate(${t} ${e} 38)" />`;
}
function Oe(e, t, n, r) {
	if (r) return P`<div class="face state-${t}" role="img" aria-label=${n}>
      <img class="face-image" src=${r} alt="" />
      ${ke(t)}
    </div>`;
	let i = Ee(e);
	return P`<div class="face state-${t}" role="img" aria-label=${n}>
    <svg viewBox="0 0 120 120" aria-hidden="true" data-emotion=${e} data-eyes=${i.eyes}>
      <circle class="head" cx="60" cy="60" r="50" />
      ${i.blush ? F`<ellipse class="blush" cx="34" cy="68" rx="7" ry="4" /><ellipse class="blush" cx="86" cy="68" rx="7" ry="4" />` : null}
      ${i.brows ? F`${X(42, i.brows[0])}${X(78, i.brows[1])}` : null}
      ${De(42, i.eyes)} ${De(78, i.eyes)}
      <g class="mouth-wrap"><path class="mouth" d=${i.mouth} /></g>
    </svg>
    ${ke(t)}
  </div>`;
}
function ke(e) {
	return e === "thinking" ? P`<div class="dots" aria-hidden="true"><span></span><span></span><span></span></div>` : e === "listening" ? P`<div class="ring" aria-hidden="true"></div>` : null;
}
// src/strings.ts
var Ae = {
	idle: "idle",
	listening: "listening",
	thinking: "thinking",
	speaking: "speaking",
	face: "{name} is {state}, {emotion}",
	subtitles: "What {name} says",
	tools: "Running",
	held: "Waiting for your approval",
	held_action: "{tool} on {targets}",
	held_target: "{action} {target}",
	expires: "expires in {seconds} s",
	approve: "Approve",
	deny: "Deny",
	approve_label: "Approve: {what}",
	deny_label: "Deny: {what}",
	memories: "What {name} remembers for the household",
	no_memories: "Nothing remembered yet.",
	memory_off: "Memory is off.",
	forget: "Forget",
	forget_label: "Forget: {what}",
	no_entity: "Choose a persona (a Companion Agent conversation entity).",
	not_found: "{entity} is not a loaded Companion Agent persona.",
	failed: "That did not work: {error}",
	missed: "Some updates were missed.",
	status_running: "running",
	status_completed: "done",
	status_error: "failed",
	status_pending_confirmation: "waiting",
	entity: "Persona",
	satellite: "Satellite or media player",
	show_subtitles: "Show subtitles",
	show_tools: "Show tool calls",
	show_confirmations: "Show held actions",
	show_memories: "Show household memories",
	card_name: "Companion",
	card_description: "The companion's face, live subtitles, held actions and memories."
}, je = {
	idle: "空闲",
	listening: "在听",
	thinking: "在想",
	speaking: "在说",
	face: "{name}{state}，{emotion}",
	subtitles: "{name}说的话",
	tools: "正在执行",
	held: "等待你的批准",
	held_action: "{targets}：{tool}",
	held_target: "{target}：{action}",
	expires: "{seconds} 秒后过期",
	approve: "批准",
	deny: "拒绝",
	approve_label: "批准：{what}",
	deny_label: "拒绝：{what}",
	memories: "{name}为全家记住的事",
	no_memories: "还没有记住任何事。",
	memory_off: "记忆已关闭。",
	forget: "忘记",
	forget_label: "忘记：{what}",
	no_entity: "请选择一个角色（Companion Agent 的对话实体）。",
	not_found: "{entity} 不是已加载的 Companion Agent 角色。",
	failed: "没有成功：{error}",
	missed: "漏掉了一些更新。",
	status_running: "执行中",
	status_completed: "完成",
	status_error: "失败",
	status_pending_confirmation: "等待中",
	entity: "角色",
	satellite: "语音卫星或媒体播放器",
	show_subtitles: "显示字幕",
	show_tools: "显示工具调用",
	show_confirmations: "显示待批准的操作",
	show_memories: "显示全家的记忆",
	card_name: "陪伴助手",
	card_description: "陪伴助手的表情、实时字幕、待批准的操作和记忆。"
}, Me = {
	en: {},
	"zh-Hans": {
		neutral: "平静",
		joy: "开心",
		happy: "开心",
		sad: "难过",
		angry: "生气",
		surprise: "惊讶",
		surprised: "惊讶",
		fear: "害怕",
		shy: "害羞",
		love: "喜爱",
		excited: "兴奋",
		calm: "平静",
		tired: "疲倦",
		confused: "困惑",
		think: "思考",
		proud: "自豪",
		worried: "担心"
	}
};
function Z(e) {
	let t = (e ?? "en").toLowerCase();
	return t === "zh" || t.startsWith("zh-hans") || t === "zh-cn" || t === "zh-sg" ? "zh-Hans" : "en";
}
function Q(e, t, n = {}) {
	return (e === "zh-Hans" ? je : Ae)[t].replace(/\{(\w+)\}/g, (e, t) => String(n[t] ?? ""));
}
function Ne(e, t) {
	return Me[e][t] ?? t;
}
// src/editor.ts
var Pe = [
	{
		name: "entity",
		required: !0,
		selector: { entity: { filter: {
			domain: "conversation",
			integration: "companion_agent"
		} } }
	},
	{
		name: "satellite",
		selector: { entity: { filter: [{ domain: "assist_satellite" }, { domain: "media_player" }] } }
	},
	{
		name: "show_subtitles",
		selector: { boolean: {} }
	},
	{
		name: "show_tools",
		selector: { boolean: {} }
	},
	{
		name: "show_confirmations",
		selector: { boolean: {} }
	},
	{
		name: "show_memories",
		selector: { boolean: {} }
	}
], Fe = class extends G {
	constructor(...e) {
		super(...e), this._label = (e) => Q(Z(this.hass?.locale?.language ?? this.hass?.language), e.name);
	}
	static {
		this.properties = {
			hass: { attribute: !1 },
			_config: { state: !0 }
		};
	}
	setConfig(e) {
		this._config = e;
	}
	valueChanged(e) {
		let t = {
			...this._config,
			...e
		};
		t.satellite || delete t.satellite, this._config = t, this.dispatchEvent(new CustomEvent("config-changed", {
			detail: { config: t },
			bubbles: !0,
			composed: !0
		}));
	}
	render() {
		return P`<ha-form
      .hass=${this.hass}
      .data=${this._config}
      .schema=${Pe}
      .computeLabel=${this._label}
      @value-changed=${(e) => this.valueChanged(e.detail.value)}
    ></ha-form>`;
	}
};
customElements.get("companion-card-editor") || customElements.define("companion-card-editor", Fe);
var Ie = 15, Le = 4, Re = 1.2;
function ze() {
	return {
		emotion: "neutral",
		tools: [],
		held: [],
		memories: [],
		memoryAvailable: !0,
		missed: !1
	};
}
function Be(e) {
	let t = (e.match(/[\u3400-\u9fff\uf900-\ufaff]/g) ?? []).length, n = t / Le + (e.length - t) / Ie;
	return Math.max(Re, n) * 1e3;
}
function Ve(e, t, n) {
	switch (t.kind) {
		case "snapshot": return {
			...e,
			persona: t.persona,
			userId: t.user.id,
			emotion: t.emotion,
			held: t.confirmations.slice(0, 8),
			missed: !1
		};
		case "memories": return {
			...e,
			memoryAvailable: t.available,
			memories: t.items.slice(0, 50)
		};
		case "turn_started": return {
			...e,
			turn: { traceId: t.trace_id },
			tools: []
		};
		case "sentence": {
			let r = {
				traceId: t.trace_id,
				text: t.text,
				gestures: t.gestures,
				shownAt: n,
				until: n + Be(t.text)
			};
			return {
				...e,
				subtitle: r,
				emotion: t.emotion ?? e.emotion,
				turn: e.turn ?? { traceId: t.trace_id }
			};
		}
		case "emotion": return {
			...e,
			emotion: t.emotion
		};
		case "tool_call": {
			let n = e.tools.filter((e) => e.id !== t.tool_id), r = {
				id: t.tool_id,
				name: t.name,
				status: t.status
			};
			return {
				...e,
				tools: [...n, r].slice(-6)
			};
		}
		case "turn_ended": return e.turn && e.turn.traceId !== t.trace_id ? e : {
			...e,
			turn: {
				traceId: t.trace_id,
				endedAt: n,
				outcome: t.outcome
			}
		};
		case "confirmation": {
			let n = e.held.filter((e) => e.id !== t.id);
			return t.status !== "requested" || !t.token ? {
				...e,
				held: n
			} : {
				...e,
				held: [...n, t].slice(-8)
			};
		}
		case "dropped": return {
			...e,
			missed: !0
		};
		default: return e;
	}
}
function He(e, t) {
	return e.held.filter((e) => e.expires_at * 1e3 > t);
}
function Ue(e, t) {
	let { subtitle: n, turn: r } = e;
	if (!(!n || r && r.traceId !== n.traceId)) return r?.endedAt === void 0 || t < Math.max(n.until, r.endedAt) + 6e3 ? n : void 0;
}
function We(e, t, n) {
	switch (n) {
		case "listening": return "listening";
		case "processing": return "thinking";
		case "responding":
		case "playing": return "speaking";
	}
	let r = e.turn, i = e.subtitle;
	return i !== void 0 && i.traceId === r?.traceId && t < i.until ? "speaking" : r && r.endedAt === void 0 ? "thinking" : "idle";
}
// src/styles.ts
var Ge = o`
  :host {
    display: block;
  }
  ha-card,
  .card {
    padding: 16px;
    display: flex;
    flex-direction: column;
    gap: 12px;
  }
  .top {
    display: flex;
    align-items: center;
    gap: 16px;
  }
  .face {
    position: relative;
    width: 112px;
    height: 112px;
    flex: none;
  }
  .face svg,
  .face-image {
    width: 100%;
    height: 100%;
    object-fit: contain;
  }
  .head {
    fill: var(--companion-face-color, #ffd98e);
    stroke: var(--primary-text-color, #222);
    stroke-width: 2.5;
  }
  .eye,
  .brow,
  .mouth {
    fill: none;
    stroke: var(--primary-text-color, #222);
    stroke-width: 3.5;
    stroke-linecap: round;
  }
  .eye-fill,
  .heart {
    fill: var(--primary-text-color, #222);
  }
  .heart {
    fill: #e0245e;
  }
  .glint {
    fill: #fff;
  }
  .blush {
    fill: #f49a9a;
    opacity: 0.7;
  }
  .mouth-wrap {
    transform-origin: 60px 80px;
  }
  .state-speaking .mouth-wrap {
    animation: talk 0.32s ease-in-out infinite alternate;
  }
  .state-idle .blink {
    animation: blink 5s infinite;
    transform-box: fill-box;
    transform-origin: center;
  }
  .dots {
    position: absolute;
    top: 0;
    right: -6px;
    display: flex;
    gap: 3px;
  }
  .dots span {
    width: 7px;
    height: 7px;
    border-radius: 50%;
    background: var(--primary-color, #03a9f4);
    animation: pulse 1.2s infinite;
  }
  .dots span:nth-child(2) {
    animation-delay: 0.2s;
  }
  .dots span:nth-child(3) {
    animation-delay: 0.4s;
  }
  .ring {
    position: absolute;
    inset: -4px;
    border-radius: 50%;
    border: 3px solid var(--primary-color, #03a9f4);
    animation: pulse 1.4s infinite;
  }
  .who {
    display: flex;
    flex-direction: column;
    gap: 4px;
    min-width: 0;
  }
  .name {
    font-size: 1.2em;
    font-weight: 500;
  }
  .state {
    color: var(--secondary-text-color, #666);
  }
  .subtitle {
    min-height: 2.6em;
    font-size: 1.15em;
    line-height: 1.3;
  }
  .gesture {
    display: inline-block;
    margin-right: 6px;
    padding: 0 6px;
    border-radius: 10px;
    font-size: 0.8em;
    background: var(--secondary-background-color, #eee);
    color: var(--secondary-text-color, #555);
    font-style: italic;
  }
  h3 {
    margin: 4px 0;
    font-size: 0.95em;
    font-weight: 500;
    color: var(--secondary-text-color, #555);
  }
  ul {
    list-style: none;
    margin: 0;
    padding: 0;
    display: flex;
    flex-direction: column;
    gap: 6px;
  }
  .tool {
    font-family: var(--code-font-family, monospace);
    font-size: 0.9em;
  }
  .held {
    border: 2px solid var(--warning-color, #ff9800);
    border-radius: 8px;
    padding: 8px;
    display: flex;
    flex-wrap: wrap;
    align-items: center;
    gap: 8px;
  }
  .held .what {
    flex: 1 1 160px;
  }
  .memory {
    display: flex;
    align-items: center;
    gap: 8px;
  }
  .memory .text {
    flex: 1;
  }
  button {
    font: inherit;
    padding: 6px 12px;
    border-radius: 6px;
    border: 1px solid var(--divider-color, #ccc);
    background: var(--card-background-color, #fff);
    color: var(--primary-text-color, #222);
    cursor: pointer;
  }
  button.approve {
    background: var(--success-color, #43a047);
    color: #fff;
    border-color: transparent;
  }
  button.deny {
    background: var(--error-color, #db4437);
    color: #fff;
    border-color: transparent;
  }
  button:focus-visible {
    outline: 3px solid var(--primary-color, #03a9f4);
    outline-offset: 2px;
  }
  .error,
  .note {
    color: var(--error-color, #db4437);
  }
  @keyframes talk {
    from {
      transform: scaleY(0.6);
    }
    to {
      transform: scaleY(1.25);
    }
  }
  @keyframes blink {
    0%,
    96%,
    100% {
      transform: scaleY(1);
    }
    98% {
      transform: scaleY(0.1);
    }
  }
  @keyframes pulse {
    0%,
    100% {
      opacity: 0.3;
    }
    50% {
      opacity: 1;
    }
  }
  @media (prefers-reduced-motion: reduce) {
    *,
    .state-speaking .mouth-wrap,
    .state-idle .blink,
    .dots span,
    .ring {
      animation: none !important;
      transition: none !important;
    }
  }
`, Ke = 250, qe = 6e4, $ = "companion_agent";
function Je(e, t) {
	let n = e.action.targets, r = n.map((e) => e.name || e.entity_id || "").filter(Boolean);
	return n.length && n.every((e) => e.action) ? n.map((e) => Q(t, "held_target", {
		action: e.action ?? "",
		target: e.name || e.entity_id || ""
	})).join(", ") : Q(t, "held_action", {
		tool: e.action.tool,
		targets: r.join(", ") || "?"
	});
}
var Ye = class extends G {
	constructor(...e) {
		super(...e), this._model = ze(), this._now = Date.now();
	}
	static {
		this.styles = Ge;
	}
	static {
		this.properties = {
			hass: { attribute: !1 },
			_config: { state: !0 },
			_model: { state: !0 },
			_error: { state: !0 },
			_now: { state: !0 }
		};
	}
	static getConfigElement() {
		return document.createElement("companion-card-editor");
	}
	static getStubConfig(e) {
		return {
			entity: Object.values(e.entities ?? {}).find((e) => e.platform === $ && e.entity_id.startsWith("conversation."))?.entity_id ?? "",
			show_subtitles: !0,
			show_tools: !0,
			show_confirmations: !0,
			show_memories: !0
		};
	}
	setConfig(e) {
		if (!e || typeof e != "object") throw Error("Invalid configuration");
		this._config = {
			show_subtitles: !0,
			show_tools: !0,
			show_confirmations: !0,
			show_memories: !0,
			...e
		};
	}
	getCardSize() {
		return 4;
	}
	get language() {
		return Z(this.hass?.locale?.language ?? this.hass?.language);
	}
	t(e, t) {
		return Q(this.language, e, t);
	}
	connectedCallback() {
		super.connectedCallback(), this._timer = setInterval(() => {
			this._clockMatters() && (this._now = Date.now());
		}, Ke), this._subscribe();
	}
	disconnectedCallback() {
		super.disconnectedCallback(), this._timer !== void 0 && clearInterval(this._timer), this._timer = void 0, this._unsubscribeNow();
	}
	updated(e) {
		(e.has("hass") || e.has("_config")) && this._subscribe();
	}
	_clockMatters() {
		let { held: e, subtitle: t, turn: n } = this._model, r = t !== void 0 && Date.now() - t.shownAt < qe;
		return e.length > 0 || r || n !== void 0 && n.endedAt === void 0;
	}
	handleEvent(e, t = Date.now()) {
		this._model = Ve(this._model, e, t), this._now = t;
	}
	async _subscribe() {
		let e = this._config?.entity;
		if (this.hass && e && this.isConnected && this._subscribedTo !== e) {
			this._subscribedTo = e, this._model = ze(), this._error = void 0, await this._stop(this._unsubscribe), this._unsubscribe = void 0;
			try {
				let t = await this.hass.connection.subscribeMessage((e) => this.handleEvent(e), {
					type: `${$}/subscribe`,
					entity_id: e
				});
				this._subscribedTo === e ? this._unsubscribe = t : await this._stop(t);
			} catch (t) {
				if (this._subscribedTo !== e) return;
				let n = t.code;
				this._error = n === "not_found" ? this.t("not_found", { entity: e }) : this.t("failed", { error: t.message ?? String(t) });
			}
		}
	}
	async _unsubscribeNow() {
		let e = this._unsubscribe;
		this._unsubscribe = void 0, this._subscribedTo = void 0, await this._stop(e);
	}
	async _stop(e) {
		try {
			await e?.();
		} catch {}
	}
	async _call(e, t) {
		try {
			await this.hass?.callService($, e, t), this._error = void 0;
		} catch (e) {
			this._error = this.t("failed", { error: e.message ?? String(e) });
		}
	}
	answer(e, t) {
		return this._model = {
			...this._model,
			held: this._model.held.filter((t) => t.id !== e.id)
		}, this._call("confirm_action", {
			token: e.token,
			approve: t
		});
	}
	forget(e) {
		return this._call("forget", { id: e });
	}
	render() {
		let e = this._config;
		if (!e?.entity) return P`<ha-card><div class="card"><p>${this.t("no_entity")}</p></div></ha-card>`;
		let t = this._model, n = this._now, r = We(t, n, e.satellite ? this.hass?.states[e.satellite]?.state : void 0), i = t.persona?.name ?? e.entity, a = t.emotion, o = t.persona?.faces[a] ?? t.persona?.faces.neutral, s = this.t("face", {
			name: i,
			state: this.t(r),
			emotion: Ne(this.language, a)
		});
		return P`<ha-card>
      <div class="card" lang=${this.language}>
        <div class="top">
          ${Oe(a, r, s, o)}
          <div class="who">
            <span class="name">${i}</span>
            <span class="state">${this.t(r)} · ${Ne(this.language, a)}</span>
          </div>
        </div>
        ${this._error ? P`<p class="error" role="alert">${this._error}</p>` : L}
        ${t.missed ? P`<p class="note">${this.t("missed")}</p>` : L}
        ${e.show_subtitles ? this._subtitles(i) : L}
        ${e.show_tools ? this._tools() : L}
        ${e.show_confirmations ? this._held(n) : L}
        ${e.show_memories ? this._memories(i) : L}
      </div>
    </ha-card>`;
	}
	_subtitles(e) {
		let t = Ue(this._model, this._now);
		return P`<div
      class="subtitle"
      role="log"
      aria-live="polite"
      aria-label=${this.t("subtitles", { name: e })}
    >
      ${t ? P`${t.gestures.map((e) => P`<span class="gesture">${e}</span>`)}<span
              class="line"
              >${t.text}</span
            >` : L}
    </div>`;
	}
	_tools() {
		let e = this._model.turn?.endedAt === void 0 ? this._model.tools : [];
		return e.length ? P`<section>
      <h3>${this.t("tools")}</h3>
      <ul>
        ${e.map((e) => P`<li class="tool">${e.name} · ${this.t(`status_${e.status}`)}</li>`)}
      </ul>
    </section>` : L;
	}
	_held(e) {
		let t = He(this._model, e);
		return t.length ? P`<section>
      <h3>${this.t("held")}</h3>
      <ul>
        ${t.map((t) => {
			let n = Je(t, this.language), r = Math.max(0, Math.round(t.expires_at - e / 1e3));
			return P`<li class="held" data-id=${t.id}>
            <span class="what">${n} <small>(${this.t("expires", { seconds: r })})</small></span>
            <button
              class="approve"
              aria-label=${this.t("approve_label", { what: n })}
              @click=${() => this.answer(t, !0)}
            >
              ${this.t("approve")}
            </button>
            <button
              class="deny"
              aria-label=${this.t("deny_label", { what: n })}
              @click=${() => this.answer(t, !1)}
            >
              ${this.t("deny")}
            </button>
          </li>`;
		})}
      </ul>
    </section>` : L;
	}
	_memories(e) {
		let t = this._model, n;
		return n = t.memoryAvailable ? t.memories.length ? P`<ul>
        ${t.memories.map((e) => P`<li class="memory" data-id=${e.id}>
              <span class="text">${e.text}</span>
              <button
                class="forget"
                aria-label=${this.t("forget_label", { what: e.text })}
                @click=${() => this.forget(e.id)}
              >
                ${this.t("forget")}
              </button>
            </li>`)}
      </ul>` : P`<p>${this.t("no_memories")}</p>` : P`<p>${this.t("memory_off")}</p>`, P`<section>
      <h3>${this.t("memories", { name: e })}</h3>
      ${n}
    </section>`;
	}
};
if (!customElements.get("companion-card")) {
	customElements.define("companion-card", Ye);
	let e = window;
	e.customCards = e.customCards ?? [], e.customCards.push({
		type: "companion-card",
		name: Q(Z(navigator.language), "card_name"),
		description: Q(Z(navigator.language), "card_description"),
		preview: !0,
		documentationURL: "https://github.com/companion-agent/companion_agent#the-companion-card"
	});
}
export { Ye as CompanionCard, Je as describeHeld };
