from django.db import models

from core.models import Book


class Entity(models.Model):
    """A character, place, item, faction or technique. Loaded from character cards (设定/角色/) and
    the roster (设定/名册.yaml); extended by extraction ingestion and curation (the Entities issue)."""

    class Type(models.TextChoices):
        CHARACTER = "角色", "角色"
        LOCATION = "地点", "地点"
        ITEM = "物品", "物品"
        FACTION = "势力", "势力"
        TECHNIQUE = "招式", "招式"

    class Tier(models.TextChoices):
        CORE = "核心", "核心"
        IMPORTANT = "重要", "重要"
        MINOR = "次要", "次要"
        DECOR = "装饰", "装饰"

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="entities", verbose_name="书")
    entity_id = models.CharField(
        max_length=120, help_text="拼音 id，如 xiaoyan、loc_wutancheng", verbose_name="实体 id"
    )
    type = models.CharField(max_length=10, choices=Type.choices, verbose_name="类型")
    canonical_name = models.CharField(max_length=200, verbose_name="正名")
    tier = models.CharField(max_length=10, choices=Tier.choices, default=Tier.DECOR, verbose_name="层级")
    description = models.TextField(blank=True, verbose_name="描述")
    base_state = models.JSONField(
        default=dict, blank=True, help_text="设定文件中的初始状态（境界、位置…）", verbose_name="初始状态"
    )
    first_appearance = models.PositiveIntegerField(null=True, blank=True, verbose_name="首次出场章")
    last_appearance = models.PositiveIntegerField(null=True, blank=True, verbose_name="最近出场章")
    is_protagonist = models.BooleanField(default=False, verbose_name="主角")
    archived = models.BooleanField(default=False, verbose_name="已归档")
    source = models.CharField(
        max_length=20, default="file", help_text="从哪里来：设定文件、抽取、迁移或后台", verbose_name="来源"
    )
    source_path = models.CharField(max_length=1000, blank=True, verbose_name="源文件")
    # The place or faction this one lies within (省 > 市 > 区, 总部 > 分部): same book, same type, no
    # cycle (entities/hierarchy.py). Owned by the roster for a file entity, by its extraction otherwise.
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="children",
        verbose_name="上级",
        help_text="所属的上级地点 / 势力（名册的 parent:）",
    )

    class Meta:
        ordering = ["book_id", "type", "entity_id"]
        constraints = [models.UniqueConstraint(fields=["book", "entity_id"], name="uniq_entity_id")]
        indexes = [
            models.Index(fields=["book", "type", "canonical_name"], name="entity_type_name_idx"),
            models.Index(fields=["book", "canonical_name"], name="entity_name_idx"),
            models.Index(fields=["book", "first_appearance"], name="entity_first_idx"),
        ]
        verbose_name = "实体"
        verbose_name_plural = "实体"

    def __str__(self) -> str:
        return f"{self.canonical_name} ({self.entity_id})"


class Alias(models.Model):
    """One name of an entity. The same alias may name several entities (resolution reports the
    ambiguity); an optional validity window limits it to a chapter range. A *generic* alias (a
    pronoun, a kinship or role word) names the entity only weakly: the scan counts its mentions apart
    and never lets them set an appearance."""

    book = models.ForeignKey(Book, on_delete=models.CASCADE, related_name="aliases", verbose_name="书")
    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="aliases", verbose_name="实体")
    alias = models.CharField(max_length=200, verbose_name="别名")
    valid_from = models.PositiveIntegerField(null=True, blank=True, verbose_name="生效起章")
    valid_to = models.PositiveIntegerField(null=True, blank=True, verbose_name="生效止章")
    note = models.CharField(max_length=300, blank=True, verbose_name="备注")
    source = models.CharField(max_length=20, default="file", verbose_name="来源")
    generic = models.BooleanField(
        default=False,
        help_text="泛称（老爷、二哥哥、那个少年、他）：提及另计为弱提及，不计出场、不定首次出场",
        verbose_name="泛称",
    )

    class Meta:
        ordering = ["book_id", "alias", "entity_id"]
        constraints = [models.UniqueConstraint(fields=["entity", "alias"], name="uniq_entity_alias")]
        indexes = [models.Index(fields=["book", "alias"], name="alias_lookup_idx")]
        verbose_name = "别名"
        verbose_name_plural = "别名"

    def __str__(self) -> str:
        return self.alias
