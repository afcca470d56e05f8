"""Declaring tools: ``@tool`` on a function or method, ``Param`` on its parameters."""

from __future__ import annotations

import contextlib
import difflib
import inspect
import re
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeVar

import jsonschema
import pydantic_core
from pydantic import ConfigDict, Field, TypeAdapter, ValidationError
from typing_extensions import NotRequired, TypedDict, Unpack

from lockgate._errors import DeclarationError, RefusedError
from lockgate.identity._canonical import to_jsonable
from lockgate.tools._configuration import check_flag, check_number, check_setting, checked_names
from lockgate.tools._context import ToolContext

__all__ = [
    "ArgumentsInvalid",
    "Param",
    "Retry",
    "ToolDeclarationError",
    "ToolDefinition",
    "ToolOptions",
    "ToolSpec",
    "definition_of",
    "invalid_arguments_sentence",
    "is_tool",
    "local_refusal",
    "schema_problems",
    "tool",
    "tool_methods",
    "tool_spec",
]

_Callable = TypeVar("_Callable", bound=Callable[..., Any])

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
_SPEC_ATTRIBUTE = "__lockgate_tool__"
_LONG_TOOL_HEARTBEAT_SECONDS = 30.0
_DEFINITION_ATTRIBUTE = "__lockgate_definition__"


class ToolDeclarationError(DeclarationError):
    """A tool is declared in a way lockgate cannot turn into a schema; the message says how."""


class ArgumentsInvalid(RefusedError, ValueError):
    """A caller's arguments do not fit a tool's schema; the message is the sentence to return."""


@dataclass(frozen=True, slots=True)
class Param:
    """Describes one tool parameter, used inside ``Annotated``.

    Example::

        @tool("list_notes", "List saved notes", scopes=["notes:read"])
        def list_notes(page: Annotated[int, Param("Page number", clamp=(1, 1000))] = 1): ...

    Attributes:
        description: What the parameter means, for people and models.
        clamp: ``(lo, hi)``: a number outside the range is brought to its nearest bound after
            validation, never refused.
        max_length: A longer string is cut to this many characters after validation.
        type: A JSON type to use instead of the annotation's (``"object"`` makes an untyped or
            ``dict`` parameter a JSON object).
        properties: For ``type="object"``: the JSON Schema of its properties.
        required: For ``type="object"``: the properties that must be present.
    """

    description: str = ""
    clamp: tuple[float, float] | None = None
    max_length: int | None = None
    type: Literal["object", "array", "string", "integer", "number", "boolean"] | None = None
    properties: Mapping[str, Any] | None = None
    required: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class Retry:
    """How often a tool's own failure is retried when it runs as a Temporal activity.

    Caller mistakes (validation, forbidden, not found, rate limited) are never retried.
    """

    max_attempts: int = 3
    initial_interval_seconds: float = 1.0
    backoff: float = 2.0
    max_interval_seconds: float = 60.0


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool's declared options, checked (:func:`tool_spec`): what ``@tool`` marks a function
    with, and what a definition is made of."""

    name: str
    description: str
    scopes: frozenset[str]
    mutating: bool
    confirm: bool
    timeout: float
    sensitive: frozenset[str]
    retry: Retry | None
    open_world: bool
    heartbeat: float | None
    local: bool

    def definition(
        self, handler: Callable[..., Any], input_schema: dict[str, Any], **made: Any
    ) -> ToolDefinition:
        """The definition of this tool run by ``handler``; ``made`` holds what its schema and
        validators were made into (parameters, validators, clamps)."""
        return ToolDefinition(
            name=self.name,
            description=self.description,
            handler=handler,
            input_schema=input_schema,
            scopes=self.scopes,
            mutating=self.mutating,
            confirm=self.confirm,
            timeout=self.timeout,
            sensitive=self.sensitive,
            retry=self.retry,
            open_world=self.open_world,
            heartbeat=self.heartbeat,
            local=self.local,
            is_async=inspect.iscoroutinefunction(handler),
            **made,
        )


def local_refusal(
    name: str, *, local: bool, mutating: bool, confirm: bool, heartbeat: float | None
) -> str | None:
    """Why tool ``name`` may not run as a Temporal local activity, or None when it may.

    A local activity's result is recorded only when the workflow task that ran it completes, so
    a worker that dies first leaves it to run again on the next worker; and it has no heartbeat.
    Only a tool that changes nothing can be run twice without anyone noticing.
    """
    if not local:
        return None
    if mutating:
        why = (
            "it is declared mutating=True, and a local activity is run again when its worker "
            "dies before the workflow task completes, so its change could happen twice"
        )
    elif confirm:
        why = (
            "it is declared confirm=True: a call someone confirmed changes something, and a "
            "local activity is run again when its worker dies before the workflow task completes"
        )
    elif heartbeat is not None:
        why = (
            "it declares heartbeat=, and a local activity has no heartbeat: a dead worker's call "
            "is run again when its workflow task times out"
        )
    else:
        return None
    return (
        f"Tool '{name}' cannot be declared local=True: {why}. Local is for cheap tools that "
        "change nothing; drop local=True to run it as a regular activity."
    )


@dataclass(frozen=True, slots=True)
class _Clamp:
    low: float | None
    high: float | None
    max_length: int | None

    def apply(self, value: Any) -> Any:
        if isinstance(value, str):
            return value[: self.max_length] if self.max_length is not None else value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if self.low is not None and value < self.low:
                return type(value)(self.low)
            if self.high is not None and value > self.high:
                return type(value)(self.high)
        return value


@dataclass(frozen=True, slots=True, eq=False)
class ToolDefinition:
    """A registered tool: what it is called, what it takes, who may run it, how it runs.

    Built by :func:`definition_of` from a ``@tool`` function, or from a raw JSON Schema by
    :meth:`ToolRegistry.register_schema`. ``local`` says that graphs and durable calls run it as
    a Temporal local activity (see :func:`tool`); it is refused, here too, with ``mutating``,
    ``confirm`` or ``heartbeat``.
    """

    name: str
    description: str
    handler: Callable[..., Any]
    input_schema: dict[str, Any]
    scopes: frozenset[str] = frozenset()
    mutating: bool = False
    confirm: bool = False
    timeout: float = 30.0
    sensitive: frozenset[str] = frozenset()
    retry: Retry | None = None
    open_world: bool = False
    heartbeat: float | None = None
    local: bool = False
    parameters: tuple[str, ...] = ()
    context_parameter: str | None = None
    returns: Any = None
    is_async: bool = False
    raw_schema: bool = False
    clamps: Mapping[str, _Clamp] = field(default_factory=dict)
    _validator: Callable[[Mapping[str, Any]], dict[str, Any]] = dict
    _revalidator: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    _after: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        # Built by hand as well as by @tool and register_schema: the rule holds for every way in.
        problem = local_refusal(
            self.name,
            local=self.local,
            mutating=self.mutating,
            confirm=self.confirm,
            heartbeat=self.heartbeat,
        )
        if problem is not None:
            raise ToolDeclarationError(problem)

    @property
    def heartbeat_seconds(self) -> float | None:
        """On Temporal, the activity's heartbeat timeout: declared, or 30 s for long tools.

        A dead worker's call is handed to another after this long, and cancellation reaches the
        tool within it; a short tool (30 s or less) needs none. A local tool has none: a local
        activity cannot heartbeat.
        """
        if self.local:
            return None
        if self.heartbeat is not None:
            return self.heartbeat
        return _LONG_TOOL_HEARTBEAT_SECONDS if self.timeout > _LONG_TOOL_HEARTBEAT_SECONDS else None

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validates and clamps ``arguments``; raises :class:`ArgumentsInvalid` with a sentence."""
        try:
            validated = self._validator(arguments)
        except ValidationError as refused:
            if self._revalidator is None:
                raise ArgumentsInvalid(self._sentence(refused)) from None
            try:
                validated = self._revalidator(arguments)
            except ValidationError as error:
                raise ArgumentsInvalid(self._sentence(error)) from None
        if self._after is not None:
            validated = self._after(validated)
        if self.clamps:
            for name, clamp in self.clamps.items():
                if name in validated:
                    validated[name] = clamp.apply(validated[name])
        return validated

    def _sentence(self, error: ValidationError) -> str:
        return validation_error_sentence(self.name, self.parameters, error)

    def summary(self) -> dict[str, Any]:
        """The MCP / LLM wire shape: ``{name, description, inputSchema, annotations}``."""
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": {
                "readOnlyHint": not self.mutating,
                "destructiveHint": self.mutating,
                "openWorldHint": self.open_world,
            },
        }


class ToolOptions(TypedDict, total=False):
    """The options of :func:`tool` (and of :meth:`ToolRegistry.register_schema`), as keywords;
    each one's default and meaning is :func:`tool`'s."""

    scopes: Iterable[str]
    mutating: bool
    confirm: bool
    timeout: float
    sensitive: Iterable[str]
    retry: Retry | None
    open_world: bool
    heartbeat: float | None
    local: bool


def tool(
    name: str, description: str = "", **options: Unpack[ToolOptions]
) -> Callable[[_Callable], _Callable]:
    """Declares a function or method as a governed tool.

    The function is returned unchanged (you can still call it directly); registering it with a
    :class:`ToolRegistry` puts every call through the pipeline. Its input schema comes from its
    signature; parameters are described with ``Annotated[..., Param(...)]``. A parameter
    annotated :class:`ToolContext` receives the caller's context and is not part of the schema.

    Args:
        name: The name callers use (``notes:list``); on Temporal also the activity's name.
        description: What the tool does, for people and models.
        scopes: The caller must hold one of these (alternatives); ``*`` holds all. Empty: anyone.
        mutating: The tool changes something (costs more rate budget, may need confirmation).
        confirm: Every call must be confirmed before it runs.
        timeout: Seconds; exceeding it marks the result ``timeout_exceeded`` (in process) and is
            the activity's start-to-close timeout on Temporal.
        sensitive: Argument names never written to a log, besides the defaults.
        retry: How a tool's own failure is retried on Temporal.
        open_world: The call reaches a third party (the data leaves this system).
        heartbeat: On Temporal, the activity's heartbeat timeout in seconds: a worker that dies
            mid-call is noticed after this long, and cancellation reaches the tool within it.
            By default long tools (timeout over 30 s) get 30 s and short ones none.
        local: In a graph (and a durable tool call), run it as a Temporal local activity, in the
            workflow's own worker: no round trip through the server per step, but its result
            is recorded only when the workflow task completes, so a worker crash runs it again.
            For cheap tools that change nothing; refused with ``mutating``, ``confirm`` or
            ``heartbeat``.
    """
    spec = tool_spec(name, description, options)

    def decorate(function: _Callable) -> _Callable:
        target = (
            function.__func__ if isinstance(function, (staticmethod, classmethod)) else function
        )
        if not callable(target):
            raise ToolDeclarationError(f"@tool('{name}') decorates {function!r}, not a function.")
        setattr(target, _SPEC_ATTRIBUTE, spec)
        return function

    return decorate


def tool_spec(name: str, description: str, options: ToolOptions) -> ToolSpec:
    """A tool's options, each checked (their defaults and meanings are :func:`tool`'s).

    Raises:
        ToolDeclarationError: An option is unknown or unusable, or ``local`` is asked of a tool
            that may not run twice unnoticed; the message names which and why.
    """
    known = ToolOptions.__optional_keys__
    for option in options:
        if option not in known:
            close = difflib.get_close_matches(str(option), known, n=1)
            raise ToolDeclarationError(
                f"@tool({name!r}) takes no option '{option}'"
                + (f": did you mean '{close[0]}'?" if close else ".")
                + f" Its options are {', '.join(sorted(known))}."
            )
    scopes = options.get("scopes", ())
    mutating = options.get("mutating", False)
    confirm = options.get("confirm", False)
    timeout = options.get("timeout", 30.0)
    sensitive = options.get("sensitive", ())
    retry = options.get("retry")
    open_world = options.get("open_world", False)
    heartbeat = options.get("heartbeat")
    local = options.get("local", False)
    if not isinstance(name, str) or not _TOOL_NAME.match(name):
        raise ToolDeclarationError(
            f"Tool name {name!r} is not usable: use 1 to 128 letters, digits and . _ : -"
        )
    if isinstance(scopes, str):
        raise ToolDeclarationError(
            f"Tool '{name}': scopes must be a list of names, not the string {scopes!r}."
        )
    where = f"@tool('{name}')"
    check_setting(where, "description", description, str, "text", error=ToolDeclarationError)
    scope_names = checked_names(where, "scopes", scopes, error=ToolDeclarationError)
    sensitive_names = checked_names(where, "sensitive", sensitive, error=ToolDeclarationError)
    for flag, value in (
        ("mutating", mutating),
        ("confirm", confirm),
        ("open_world", open_world),
        ("local", local),
    ):
        check_flag(where, flag, value, error=ToolDeclarationError)
    check_number(where, "timeout", timeout, "a number of seconds", error=ToolDeclarationError)
    check_number(
        where,
        "heartbeat",
        heartbeat,
        "a number of seconds",
        optional=True,
        error=ToolDeclarationError,
    )
    check_setting(
        where,
        "retry",
        retry,
        Retry,
        "a Retry (Retry(max_attempts=5))",
        optional=True,
        error=ToolDeclarationError,
    )
    if timeout <= 0:
        raise ToolDeclarationError(f"Tool '{name}': timeout must be positive, not {timeout}.")
    if heartbeat is not None and not 0 < heartbeat <= timeout:
        raise ToolDeclarationError(
            f"Tool '{name}': heartbeat must be positive and at most the timeout, not {heartbeat}."
        )
    problem = local_refusal(
        name, local=local, mutating=mutating, confirm=confirm, heartbeat=heartbeat
    )
    if problem is not None:
        raise ToolDeclarationError(problem)
    return ToolSpec(
        name=name,
        description=description,
        scopes=scope_names,
        mutating=mutating,
        confirm=confirm,
        timeout=float(timeout),
        sensitive=sensitive_names,
        retry=retry,
        open_world=open_world,
        heartbeat=heartbeat,
        local=local,
    )


def is_tool(candidate: object) -> bool:
    """Whether ``candidate`` (a function or bound method) was declared with ``@tool``."""
    return _spec_of(candidate) is not None


def _spec_of(candidate: object) -> ToolSpec | None:
    target = getattr(candidate, "__func__", candidate)
    spec = getattr(target, _SPEC_ATTRIBUTE, None)
    return spec if isinstance(spec, ToolSpec) else None


def tool_methods(instance: object) -> list[Callable[..., Any]]:
    """The ``@tool`` methods of ``instance``, bound, in definition order."""
    found: list[Callable[..., Any]] = []
    seen: set[str] = set()
    for klass in type(instance).__mro__:
        for attribute, value in vars(klass).items():
            if attribute in seen:
                continue
            seen.add(attribute)
            raw = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
            if _spec_of(raw) is not None:
                found.append(getattr(instance, attribute))
    return found


def definition_of(function: Callable[..., Any]) -> ToolDefinition:
    """The :class:`ToolDefinition` of a ``@tool`` function or bound method (built once)."""
    spec = _spec_of(function)
    if spec is None:
        raise ToolDeclarationError(
            f"{getattr(function, '__qualname__', function)!r} is not a tool: decorate it with "
            "@tool(name, description)."
        )
    is_method = inspect.ismethod(function)
    if not is_method:
        cached = getattr(function, _DEFINITION_ATTRIBUTE, None)
        if isinstance(cached, ToolDefinition):
            return cached
    definition = _build_definition(spec, function)
    if not is_method:
        setattr(function, _DEFINITION_ATTRIBUTE, definition)
    return definition


_JSON_TYPES: Mapping[str, Any] = {
    "object": dict[str, Any],
    "array": list[Any],
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
}


def _build_definition(spec: ToolSpec, function: Callable[..., Any]) -> ToolDefinition:
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except Exception as error:
        raise ToolDeclarationError(
            f"Tool '{spec.name}': its annotations cannot be resolved ({error})."
        ) from error
    signature = inspect.signature(function)
    fields: dict[str, Any] = {}
    defaults: dict[str, Any] = {}
    clamps: dict[str, _Clamp] = {}
    object_schemas: dict[str, dict[str, Any]] = {}
    parameters: list[str] = []
    context_parameter: str | None = None
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise ToolDeclarationError(
                f"Tool '{spec.name}': *{parameter.name} cannot be described by a schema; "
                "declare each argument by name."
            )
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise ToolDeclarationError(
                f"Tool '{spec.name}': '{parameter.name}' is positional-only; tools are called "
                "with named arguments."
            )
        annotation = hints.get(parameter.name, Any)
        base, param = _split_annotation(annotation)
        if base is ToolContext:
            context_parameter = parameter.name
            continue
        parameters.append(parameter.name)
        description = param.description if param else ""
        if param and param.type:
            base = _JSON_TYPES[param.type]
        if param and (param.clamp is not None or param.max_length is not None):
            low, high = param.clamp if param.clamp is not None else (None, None)
            clamps[parameter.name] = _Clamp(low, high, param.max_length)
            bounds = [f"{low:g}–{high:g}" if param.clamp is not None else None]
            if param.max_length is not None:
                bounds.append(f"at most {param.max_length} characters")
            note = "; ".join(b for b in bounds if b)
            description = f"{description} (clamped to {note})".strip()
        if param and param.properties is not None:
            object_schemas[parameter.name] = {
                "type": "object",
                "properties": dict(param.properties),
                **({"required": list(param.required)} if param.required else {}),
            }
        field_type = Annotated[base, Field(description=description or None)]  # type: ignore[valid-type]
        if parameter.default is inspect.Parameter.empty:
            fields[parameter.name] = field_type
        else:
            fields[parameter.name] = NotRequired[field_type]
            defaults[parameter.name] = parameter.default
    adapter = _arguments_adapter(spec.name, fields)
    schema = _clean_schema(adapter.json_schema())
    for name, default in defaults.items():
        with contextlib.suppress(TypeError):  # a default that is not JSON data goes unadvertised
            schema["properties"][name]["default"] = to_jsonable(default)
    for name, object_schema in object_schemas.items():
        schema["properties"][name] = {**schema["properties"][name], **object_schema}
    validators = {
        name: jsonschema.Draft202012Validator(object_schema)
        for name, object_schema in object_schemas.items()
    }
    return spec.definition(
        function,
        schema,
        parameters=tuple(parameters),
        context_parameter=context_parameter,
        returns=hints.get("return"),
        clamps=clamps,
        _validator=adapter.validator.validate_python,
        _revalidator=_as_json_validator(adapter),
        _after=_object_validator(spec.name, validators),
    )


def _split_annotation(annotation: Any) -> tuple[Any, Param | None]:
    if typing.get_origin(annotation) is typing.Annotated:
        base, *extras = typing.get_args(annotation)
        params = [extra for extra in extras if isinstance(extra, Param)]
        others = [extra for extra in extras if not isinstance(extra, Param)]
        if others:
            base = typing.Annotated[(base, *others)]
        return base, params[0] if params else None
    return annotation, None


def _arguments_adapter(tool_name: str, fields: dict[str, Any]) -> TypeAdapter[Any]:
    # A TypedDict validates straight into the keyword arguments, and leaves an omitted optional
    # argument absent so that the function's own default applies.
    arguments = TypedDict(  # type: ignore[misc]
        "Arguments_" + re.sub(r"\W", "_", tool_name), fields
    )
    # Strict, as JSON is: "5" is not an integer and true is not 1 (set here rather than per call,
    # which costs twice as much on every call).
    arguments.__pydantic_config__ = ConfigDict(  # type: ignore[attr-defined]
        extra="forbid", allow_inf_nan=False, strict=True
    )
    try:
        return TypeAdapter(arguments)
    except Exception as error:
        raise ToolDeclarationError(
            f"Tool '{tool_name}': its parameters cannot be described by a JSON schema ({error})."
        ) from error


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drops pydantic's generated titles, which cost model tokens and say nothing."""
    schema.pop("title", None)
    schema.setdefault("properties", {})
    for value in schema["properties"].values():
        if isinstance(value, dict):
            value.pop("title", None)
    for definition in schema.get("$defs", {}).values():
        if isinstance(definition, dict):
            for value in definition.get("properties", {}).values():
                if isinstance(value, dict):
                    value.pop("title", None)
    schema["additionalProperties"] = False
    return schema


def _as_json_validator(adapter: TypeAdapter[Any]) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """Validates arguments strictly as the JSON they are on the wire.

    Strict Python validation runs first (the common case, and cheap): ``"5"`` is not an integer
    and ``true`` is not 1. What it refuses is tried again as JSON, where an enum arrives as its
    value and a date as text; the error of that attempt is the one reported.
    """
    validate_json = adapter.validator.validate_json

    def validate(arguments: Mapping[str, Any]) -> dict[str, Any]:
        try:
            encoded = pydantic_core.to_json(arguments, inf_nan_mode="constants")
        except pydantic_core.PydanticSerializationError:
            encoded = b"null"  # not JSON data: let the validator say what was expected
        validated: dict[str, Any] = validate_json(encoded)
        return validated

    return validate


def _object_validator(
    tool_name: str, object_validators: Mapping[str, jsonschema.Draft202012Validator]
) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    """Checks ``Param(type="object", properties=...)`` arguments against their JSON Schema."""
    if not object_validators:
        return None

    def validate(validated: dict[str, Any]) -> dict[str, Any]:
        for name, object_validator in object_validators.items():
            if name in validated:
                problems = schema_problems(object_validator, validated[name], within=name)
                if problems:
                    raise ArgumentsInvalid(invalid_arguments_sentence(tool_name, problems))
        return validated

    return validate


def validation_error_sentence(
    tool_name: str, parameters: Sequence[str], error: ValidationError
) -> str:
    """One sentence naming every argument that is wrong and how."""
    problems: list[str] = []
    for detail in error.errors(include_url=False):
        location = ".".join(str(part) for part in detail["loc"]) or "(arguments)"
        kind = detail["type"]
        if kind == "missing":
            problems.append(f"'{location}' is required and missing")
        elif kind == "extra_forbidden":
            takes = ", ".join(parameters) if parameters else "no arguments"
            problems.append(f"'{location}' is not an argument of '{tool_name}' (it takes: {takes})")
        else:
            shown = repr(detail.get("input"))
            if len(shown) > 60:
                shown = shown[:57] + "..."
            problems.append(f"'{location}': {detail['msg'].rstrip('.')} (got {shown})")
    return invalid_arguments_sentence(tool_name, problems)


def schema_problems(
    validator: jsonschema.Draft202012Validator, value: object, *, within: str | None = None
) -> list[str]:
    """Each way ``value`` breaks ``validator``'s JSON Schema, as ``'where': what`` (``where``
    starting at argument ``within``; a problem of the whole of a tool's arguments is only
    ``what``)."""
    problems: list[str] = []
    for problem in validator.iter_errors(value):
        where = [*([within] if within is not None else []), *map(str, problem.absolute_path)]
        problems.append(f"'{'.'.join(where)}': {problem.message}" if where else problem.message)
    return problems


def invalid_arguments_sentence(tool_name: str, problems: Sequence[str]) -> str:
    """The sentence refusing a call of ``tool_name`` whose arguments have these ``problems``."""
    return f"Invalid arguments for '{tool_name}': {'; '.join(problems)}."
